import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
// The "source" condition runs the workspace SDK from its TypeScript sources, as the tests do.
const CLI = ["--conditions=source", "--import", "tsx", "src/cli.ts"];

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  server.close();
  if (!address || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** The real `handoff serve` in a child process, as an operator runs it. */
export class ServerProcess {
  /** What the server wrote on stdout (its request log), when started with `captureLog`. */
  log = "";

  private constructor(
    readonly child: ChildProcess,
    readonly baseUrl: string,
  ) {
    child.stdout?.setEncoding("utf8");
    child.stdout?.on("data", (text: string) => {
      this.log += text;
    });
  }

  static async start(
    env: Record<string, string>,
    options: { captureLog?: boolean; readyTimeoutMs?: number } = {},
  ): Promise<ServerProcess> {
    const port = await freePort();
    const child = spawn(process.execPath, [...CLI, "serve"], {
      cwd: ROOT,
      env: { ...process.env, ...env, PORT: String(port), HOST: "127.0.0.1" },
      stdio: ["ignore", options.captureLog ? "pipe" : "ignore", "pipe"],
    });
    const server = new ServerProcess(child, `http://127.0.0.1:${port}`);
    await server.waitReady(options.readyTimeoutMs);
    return server;
  }

  async waitReady(timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null) throw new Error(`server exited with ${this.child.exitCode}`);
      try {
        const response = await fetch(`${this.baseUrl}/readyz`);
        if (response.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("server not ready in time");
  }

  async kill(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = once(this.child, "exit");
    this.child.kill(signal);
    await exited;
  }
}

/** One JSON request to the server process with a bearer token; answers its status and parsed body. */
export async function json<T = Record<string, unknown>>(
  server: ServerProcess,
  method: string,
  path: string,
  token: string,
  body?: unknown,
) {
  const response = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

/** Runs a `handoff` CLI command to completion. */
export function runCli(args: string[], env: Record<string, string>) {
  return spawnSync(process.execPath, [...CLI, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: "utf8",
    timeout: 120_000,
  });
}

/** One JSON request to `base` with a bearer token; answers the parsed body, throws on a status of 300 or more. */
export async function callJson(base: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}
