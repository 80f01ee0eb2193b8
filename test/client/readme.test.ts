import { spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../support/server-process.js";
import { cliAnywhere, ROOT, tempDir } from "./support.js";

/** Start-up of the embedded server takes minutes when the machine is busy. */
const STEP_TIMEOUT_S = 300;

/**
 * The fenced `sh` blocks of one README section, from its heading to the next heading of any
 * level: read from README.md itself, so this test fails when the README changes and no longer works.
 */
function shellBlocks(readme: string, heading: string): string[] {
  const start = readme.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`README.md has no section "${heading}"`);
  const rest = readme.slice(start + heading.length + 2);
  const next = rest.search(/\n#{2,3} /);
  const section = next < 0 ? rest : rest.slice(0, next);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

/**
 * A block with each of its commands checked: every logical line (continuations joined) that
 * fails stops the script with the line named. (`set -e` would let a failure inside `a && b` pass.)
 */
function checked(block: string): string {
  return block
    .replace(/\\\n/g, " ")
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.trim().startsWith("#"))
    .map(
      (line) =>
        `${line}\n__s=$?; [ "$__s" -eq 0 ] || { echo "README command failed ($__s): ${line.replaceAll("'", "").replaceAll('"', "").replaceAll("$", "").replaceAll("`", "")}" >&2; exit 1; }`,
    )
    .join("\n");
}

/**
 * What stands in for what the README's reader has, in bash, before each block: `npm ci` is done
 * already; `npm start` starts the server in the background (after stopping the one before, as
 * Ctrl-C would) and returns once it answers; `npm run -s handoff --` and `node dist/src/cli.js`
 * are the CLI from its sources; every curl answer's status is logged to stderr. The only change to
 * the README's text: port 8080 becomes a free one.
 */
function prelude(port: number): string {
  const cli = cliAnywhere()
    .map((arg) => `'${arg}'`)
    .join(" ");
  return `set -uo pipefail
export HOST=127.0.0.1 PORT=${port} HANDOFF_URL=http://127.0.0.1:${port}
__cli() { command node ${cli} "$@"; }
__stop() { if [ -f server.pid ]; then kill "$(cat server.pid)" 2>/dev/null || true; while kill -0 "$(cat server.pid)" 2>/dev/null; do sleep 0.1; done; rm -f server.pid; fi; }
__start() {
  __stop
  (exec node ${cli} serve >> server.log 2>&1) & echo $! > server.pid
  for ((i = 0; i < ${STEP_TIMEOUT_S * 10}; i++)); do
    command curl -sf -o /dev/null "http://127.0.0.1:${port}/readyz" && return 0
    kill -0 "$(cat server.pid)" 2>/dev/null || { echo "the server exited: $(tail -5 server.log)" >&2; return 1; }
    sleep 0.1
  done
  echo "the server was not ready in time" >&2; return 1
}
npm() {
  case "$1" in
    ci) return 0 ;;
    start) __start ;;
    run) shift; [ "$1" = -s ] && shift; [ "$1" = handoff ] && shift; [ "$1" = -- ] && shift; __cli "$@" ;;
    *) echo "npm $* is not part of the walk-through" >&2; return 1 ;;
  esac
}
node() { if [ "$1" = dist/src/cli.js ]; then shift; __cli "$@"; else command node "$@"; fi; }
curl() { command curl --write-out '%{stderr}curl-status %{http_code} %{method} %{url_effective}\\n' "$@"; }
`;
}

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a script in bash in `cwd`; variables and functions carry from block to block within it. */
async function bash(script: string, cwd: string): Promise<Run> {
  const child = spawn("bash", ["-c", script], { cwd, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const [status] = (await once(child, "close")) as [number | null];
  return { status, stdout, stderr };
}

/** The status of every curl request a run made, from the prelude's log lines. */
const curlStatuses = (stderr: string) =>
  [...stderr.matchAll(/^curl-status (\d{3}) (\S+) (\S+)$/gm)].map(([, status, method, url]) => ({
    status: Number(status),
    request: `${method} ${url}`,
  }));

describe("README.md: every command of the two walk-throughs runs twice in a fresh folder", () => {
  const work = tempDir("handoff-readme-");
  afterAll(async () => {
    await bash("[ -f server.pid ] && kill $(cat server.pid) 2>/dev/null; true", work.path);
    work.remove();
  });

  it(
    "runs each walk-through, then all of it again, and nothing is lost or broken",
    async () => {
      const readme = readFileSync(join(ROOT, "README.md"), "utf8");
      const port = await freePort();
      const local = (block: string) => block.replaceAll("127.0.0.1:8080", `127.0.0.1:${port}`);
      const first = shellBlocks(readme, "## Send your first encrypted file").map(local);
      const curl = shellBlocks(readme, "## Walk-through with curl").map(local);
      expect(first.length, "the first walk-through's blocks").toBe(2);
      expect(curl.length, "the curl walk-through's blocks").toBe(3);
      copyFileSync(join(ROOT, "README.md"), join(work.path, "README.md"));

      // One reader, one shell: both walk-throughs in order, the server stopped between them (Ctrl-C).
      const walkThroughs = [...first, "__stop", ...curl, "__stop"].map(checked).join("\n");
      const runs: Run[] = [];
      const kept: Record<string, string> = {};
      for (const pass of [1, 2]) {
        const run = await bash(`${prelude(port)}\n${walkThroughs}\n`, work.path);
        runs.push(run);
        const log = existsSync(join(work.path, "server.log"))
          ? readFileSync(join(work.path, "server.log"), "utf8")
          : "";
        expect(run.status, `pass ${pass}: ${run.stderr.slice(-3000)}\nserver: ${log.slice(-2000)}`).toBe(0);
        for (const { status, request } of curlStatuses(run.stderr))
          expect(status, `pass ${pass}: ${request}`).toBeLessThan(400);
        expect(run.stdout, `pass ${pass}: the revoked key's use`).toMatch(/\b401\n/);
        if (pass === 1)
          for (const file of ["account.json", "curl-account.json", "alice.json", "bob.json"])
            kept[file] = readFileSync(join(work.path, file), "utf8");
      }

      // No key lost: the files the first pass made are as they were, and their keys still work.
      for (const [file, text] of Object.entries(kept))
        expect(readFileSync(join(work.path, file), "utf8")).toBe(text);
      const keysWork = await bash(
        `${prelude(port)}
npm start
for file in account.json curl-account.json; do
  HANDOFF_API_KEY=$(node -p "require('./$file').api_key.api_key") __cli whoami --json
done
__stop`,
        work.path,
      );
      expect(keysWork.status, keysWork.stderr).toBe(0);
      expect(keysWork.stdout).toContain('"email": "you@example.com"');
      expect(keysWork.stdout).toContain('"email": "curl@example.com"');

      // Each pass did the walk-through's work: bob got README.md twice, beta got hello.txt.
      expect(readFileSync(join(work.path, "received/README.md"), "utf8")).toBe(readme);
      expect(readFileSync(join(work.path, "received/README (1).md"), "utf8")).toBe(readme);
      expect(readFileSync(join(work.path, "hello.out"), "utf8")).toBe("hello\n");
      // The second pass of the curl walk-through rotated the agents it made the first time.
      expect(runs[1]?.stderr).not.toContain("AGENT_ID_TAKEN");
    },
    30 * 60_000,
  );
});
