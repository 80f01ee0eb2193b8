import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, tempDir } from "../support/databases.js";
import { checkAnswersAgainstDocument } from "../support/openapi-check.js";
import { freePort } from "../support/server-process.js";

export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** The real `handoff` CLI, run from its TypeScript sources as test/support/server-process.ts does. */
export const CLI = [process.execPath, "--conditions=source", "--import", "tsx", "src/cli.ts"] as const;

/** The node arguments that run the `handoff` CLI from its sources whatever the working folder. */
export function cliAnywhere(): string[] {
  const tsx = pathToFileURL(join(ROOT, "node_modules/tsx/dist/loader.mjs")).href;
  return ["--conditions=source", "--import", tsx, join(ROOT, "src/cli.ts")];
}

/** The real service (on PGlite, or PostgreSQL when asked and there is one), listening on a real port so that child processes can reach it. */
export interface ListeningServer extends TestApp {
  baseUrl: string;
  blobsDir: string;
}

export interface ListeningOptions {
  /** On PostgreSQL when the tests have one (PGlite starts slowly on a loaded machine). */
  postgres?: boolean;
  /** Collects `METHOD /path?query` of every request the server receives. */
  requests?: string[];
}

/**
 * `env` adds to the server's settings (PUBLIC_BASE_URL naming a proxy in front of it); `postgres`
 * puts it on PostgreSQL when the tests have one, for tests that do not read the embedded database
 * in DATA_DIR themselves.
 */
export async function startListeningServer(
  env: Record<string, string> = {},
  { postgres = false, requests }: ListeningOptions = {},
): Promise<ListeningServer> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const app = await startTestApp({
    database: postgres && postgresServer ? "postgres" : "pglite",
    env: { PORT: String(port), PUBLIC_BASE_URL: baseUrl, ...env },
    app: {
      instrument: (fastify) => {
        checkAnswersAgainstDocument(fastify);
        if (requests)
          fastify.addHook(
            "onRequest",
            async (request) => void requests.push(`${request.method} ${request.url}`),
          );
      },
    },
  });
  await app.app.listen({ port, host: "127.0.0.1" });
  return { ...app, baseUrl, blobsDir: join(app.service.config.dataDir, "blobs") };
}

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `handoff ARGS` to completion without blocking this process's event loop (the server may
 * live in it). HANDOFF_URL and HANDOFF_API_KEY come from `env`, never from the test runner's own.
 */
export function handoff(args: string[], env: Record<string, string>, cwd = ROOT): Promise<CliRun> {
  return completion(startHandoff(args, env, cwd));
}

/** `handoff ARGS` as a running child process with piped stdio. */
export function startHandoff(args: string[], env: Record<string, string>, cwd = ROOT): ChildProcess {
  return spawn(process.execPath, [...cliAnywhere(), ...args], {
    cwd,
    env: clientEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/**
 * `handoff ARGS` with a terminal (a pseudo-terminal from util-linux `script`) for stdin, stdout
 * and stderr alike: what a user at a shell sees arrives on stdout, in the order it was written.
 */
export function handoffInTerminal(args: string[], env: Record<string, string>): Promise<CliRun> {
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;
  const command = [...CLI, ...args].map(quote).join(" ");
  return completion(
    spawn("script", ["--quiet", "--return", "--command", command, "/dev/null"], {
      cwd: ROOT,
      env: clientEnv(env),
      stdio: ["ignore", "pipe", "pipe"],
    }),
  );
}

/** The test runner's environment without its own Handoff settings, plus `env`. */
function clientEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const { HANDOFF_URL: _url, HANDOFF_API_KEY: _key, ...inherited } = process.env;
  return { ...inherited, ...env };
}

/** What a child process has written so far, growing as it writes. */
export function captured(child: ChildProcess): { stdout: string; stderr: string } {
  const output = { stdout: "", stderr: "" };
  child.stdout?.on("data", (chunk: Buffer) => {
    output.stdout += chunk.toString("utf8");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output.stderr += chunk.toString("utf8");
  });
  return output;
}

async function completion(child: ChildProcess): Promise<CliRun> {
  const output = captured(child);
  const [status] = (await once(child, "close")) as [number | null];
  return { status, ...output };
}

/** Waits until `ready()` holds; after 30 s fails with `what` and the context `explain()` gives. */
export async function eventually(ready: () => boolean, what: string, explain: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen; ${explain()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An account with its first API key, and the environment a client of that account runs in. */
export async function clientAccount(server: ListeningServer) {
  const account = await server.newAccount("team");
  return { ...account, env: { HANDOFF_URL: server.baseUrl, HANDOFF_API_KEY: account.apiKey } };
}

/** Publishes a broadcast to every agent (decisions section 2). */
export async function publishBroadcast(server: ListeningServer, title: string, severity: string) {
  const response = await server.call("POST", "/v1/admin/broadcasts", {
    key: ADMIN_TOKEN,
    body: { title, content: `${title}: details`, severity },
  });
  if (response.statusCode !== 201) throw new Error(`broadcast failed: ${response.body}`);
}

/** Every stored blob file of `size` bytes under the server's blob directory. */
export function blobsOfSize(dir: string, size: number): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isFile() && statSync(path).size === size) found.push(path);
  }
  return found;
}

/** Files (not folders) anywhere under `dir`, relative to it. */
/** Writes `files` (relative names with `/`) under `root`, making their folders; answers `root`. */
export function writeTree(root: string, files: Record<string, Buffer>): string {
  for (const [name, bytes] of Object.entries(files)) {
    mkdirSync(dirname(join(root, name)), { recursive: true });
    writeFileSync(join(root, name), bytes);
  }
  return root;
}

/** A folder's worth of files in nested folders, a hidden one among them, named from the folder `top`. */
export function nestedFolder(top: string): Record<string, Buffer> {
  return {
    [`${top}/README.md`]: Buffer.from("# project\n"),
    [`${top}/.env.example`]: Buffer.from("KEY=\n"),
    [`${top}/src/main.py`]: randomBytes(70_000),
    [`${top}/src/lib/util.py`]: randomBytes(1),
    [`${top}/src/lib/deep/er/empty.txt`]: Buffer.alloc(0),
  };
}

export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

export { tempDir };
