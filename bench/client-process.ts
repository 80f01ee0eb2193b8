/**
 * One `handoff` client command as a child process (`node dist/src/cli.js`) under /usr/bin/time: its
 * wall time, the kernel's peak RSS (wait4's ru_maxrss) and its user and system CPU seconds. Shared
 * by the client benchmarks (client-transfer.ts, shield-receive.ts).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, rmSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import {
  createAccount,
  mibPerSecond,
  pad,
  ROOT,
  type ServerChild,
  startHandoff,
  syncDisks,
} from "./support.js";

const TIME = "/usr/bin/time";
/** Node flags for the client processes, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof". */
const CLIENT_NODE_ARGS = (process.env.BENCH_CLIENT_NODE_ARGS ?? "").split(" ").filter(Boolean);
export const RSS_LIMIT_KB = (150 * 1000 * 1000) / 1024;

export interface ClientRun {
  ms: number;
  peakKb: number;
  userSeconds: number;
  systemSeconds: number;
  stdout: string;
}

export function requireTime(): void {
  if (!existsSync(TIME)) throw new Error(`${TIME} is needed for the peak RSS of the client processes`);
}

/**
 * `handoff ARGS` from dist under /usr/bin/time; `okCodes` are the exit codes that are not failures
 * (137: killed by SIGKILL), and `spawned` is given the /usr/bin/time process as it starts.
 */
export function timedHandoff(
  args: string[],
  env: Record<string, string>,
  okCodes: number[] = [0],
  spawned?: (time: ChildProcess) => void,
) {
  const command = [process.execPath, ...CLIENT_NODE_ARGS, "dist/src/cli.js"];
  return timedCommand(command, args, env, okCodes, spawned);
}

/** A client command (`command` then `args`, e.g. the Python client's) under /usr/bin/time. */
export async function timedCommand(
  command: string[],
  args: string[],
  env: Record<string, string>,
  okCodes: number[] = [0],
  spawned?: (time: ChildProcess) => void,
): Promise<ClientRun> {
  const child = spawn(TIME, ["-f", "BENCH-TIME %M %U %S", ...command, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  spawned?.(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const start = performance.now();
  const [code] = (await once(child, "close")) as [number | null];
  const ms = performance.now() - start;
  // /usr/bin/time reports a non-zero exit as "Command exited with non-zero status N" before its figures.
  const figures = /BENCH-TIME (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
  if (code === null || !okCodes.includes(code) || !figures)
    throw new Error(`handoff ${args[0]} ended with ${code}: ${stderr.trim()}`);
  return {
    ms,
    peakKb: Number(figures[1]),
    userSeconds: Number(figures[2]),
    systemSeconds: Number(figures[3]),
    stdout,
  };
}

/** Megabytes (10^6 bytes), the unit of the 150 MB target. */
export const mbText = (kb: number) => `${pad(((kb * 1024) / 1e6).toFixed(0), 4)} MB`;

export const describeRun = (run: ClientRun, size: number) =>
  `${(run.ms / 1000).toFixed(2)} s ${mibPerSecond(size, run.ms).toFixed(0)} MiB/s, peak RSS ${mbText(run.peakKb).trim()}, ` +
  `CPU ${(run.userSeconds + run.systemSeconds).toFixed(2)} s (user ${run.userSeconds.toFixed(2)}, system ${run.systemSeconds.toFixed(2)})`;

export interface Agent {
  slug: string;
  /** Its identity file, made by `handoff identity new`. */
  identity: string;
}

export interface ClientBench {
  server: ServerChild;
  /** HANDOFF_URL and HANDOFF_API_KEY for the client processes. */
  env: Record<string, string>;
  sender: Agent;
  receiver: Agent;
}

/**
 * The server from dist in `dir` (`env` for its settings, e.g. DATABASE_URL), one account, and a
 * sender and a receiver agent named after `name`.
 */
export async function startClientBench(
  dir: string,
  name: string,
  env: Record<string, string> = {},
): Promise<ClientBench> {
  const server = await startHandoff({ dataDir: join(dir, "server"), env });
  try {
    const account = await createAccount(server.baseUrl, `${name}@example.com`, "scale");
    const env = { HANDOFF_URL: server.baseUrl, HANDOFF_API_KEY: account.apiKey };
    const agent = (role: string): Agent => ({
      slug: `${name}-${role}`,
      identity: join(dir, `${name}-${role}.json`),
    });
    const sender = agent("sender");
    const receiver = agent("receiver");
    for (const { slug, identity } of [sender, receiver])
      await timedHandoff(["identity", "new", "--agent", slug, "--out", identity], env);
    return { server, env, sender, receiver };
  } catch (error) {
    await server.stop();
    throw error;
  }
}

/** Runs one client command (`args`) as a timed process: the Node CLI's, or another client's. */
export type ClientRunner = (args: string[], env: Record<string, string>) => Promise<ClientRun>;

/**
 * One file sent by the bench's sender and received by its receiver into `outDir` (checked for its
 * size, then removed, and the transfer deleted), each step timed; `sendFlags` go before the path.
 */
export async function sendAndReceive(
  bench: ClientBench,
  source: string,
  outDir: string,
  run: ClientRunner = timedHandoff,
  sendFlags: string[] = [],
): Promise<{ send: ClientRun; receive: ClientRun }> {
  const { env, sender, receiver, server } = bench;
  syncDisks();
  const send = await run(
    ["send", "--identity", sender.identity, "--to", receiver.slug, ...sendFlags, source],
    env,
  );
  const id = (JSON.parse(send.stdout) as { id: string }).id;
  syncDisks();
  const receive = await run(["receive", id, "--identity", receiver.identity, "--out", outDir], env);
  const written = statSync(join(outDir, basename(source))).size;
  const size = statSync(source).size;
  if (written !== size) throw new Error(`received ${written} of ${size} bytes into ${outDir}`);
  rmSync(outDir, { recursive: true, force: true });
  await fetch(`${server.baseUrl}/v1/transfers/${id}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${env.HANDOFF_API_KEY}` },
  });
  return { send, receive };
}
