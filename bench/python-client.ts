/**
 * The Python client against the Node client, end to end on the same file in the same run: `send`
 * then `receive` of one large encrypted file by each CLI (`python3 -m handoff` from
 * packages/python/src, `node dist/src/cli.js`), as child processes against the real server from
 * dist, alternating which client goes first. Both use the same identity files. Peak RSS of each
 * process from the kernel (/usr/bin/time); throughput is the file size over each process's wall
 * time, start-up included. Figures only, never a timed test.
 *
 *   npm run bench -- python
 *
 * Environment: BENCH_PYTHON_SIZE_MIB (default 1024), BENCH_PYTHON_RUNS (default 2: best of).
 * Targets (issue 24): Python's throughput >= 80 % of Node's for each step; peak RSS of each Python
 * process <= 100 MB.
 */
import { createWriteStream, rmSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import {
  type ClientBench,
  type ClientRun,
  describeRun,
  mbText,
  requireTime,
  startClientBench,
  timedCommand,
  timedHandoff,
} from "./client-process.js";
import {
  guard,
  loadAverage,
  MiB,
  mibPerSecond,
  pad,
  patternSource,
  ROOT,
  syncDisks,
  tempRoot,
  verdict,
} from "./support.js";

const SIZE = Number(process.env.BENCH_PYTHON_SIZE_MIB ?? 1024) * MiB;
const RUNS = Number(process.env.BENCH_PYTHON_RUNS ?? 2);
const RATIO_TARGET = 0.8;
const PYTHON_RSS_LIMIT_KB = (100 * 1000 * 1000) / 1024;
const PYTHON = ["/usr/bin/python3", "-m", "handoff"];
const PYTHON_ENV = { PYTHONPATH: join(ROOT, "packages/python/src") };

type Client = "node" | "python";

interface Pair {
  send: ClientRun;
  receive: ClientRun;
}

function run(client: Client, args: string[], env: Record<string, string>): Promise<ClientRun> {
  return client === "node" ? timedHandoff(args, env) : timedCommand(PYTHON, args, { ...env, ...PYTHON_ENV });
}

async function main(): Promise<void> {
  guard(20 * 60 * 1000, "python-client");
  requireTime();
  const temp = tempRoot("handoff-bench-python");
  console.log(
    `# Python client vs Node client: send + receive of ${SIZE / MiB} MiB encrypted, best of ${RUNS}; ` +
      `node ${process.version}, ${cpus().length} CPUs, load average ${loadAverage()}`,
  );
  let bench: ClientBench | null = null;
  try {
    bench = await startClientBench(temp.dir, "bench");
    const { env, sender, receiver, server } = bench;
    const source = join(temp.dir, "payload.bin");
    await pipeline(patternSource(SIZE), createWriteStream(source));

    const transfer = async (client: Client, round: number): Promise<Pair> => {
      syncDisks();
      const send = await run(
        client,
        ["send", "--identity", sender.identity, "--to", receiver.slug, source],
        env,
      );
      const id = (JSON.parse(send.stdout) as { id: string }).id;
      const outDir = join(temp.dir, `out-${client}-${round}`);
      syncDisks();
      const receive = await run(
        client,
        ["receive", id, "--identity", receiver.identity, "--out", outDir],
        env,
      );
      const written = statSync(join(outDir, "payload.bin")).size;
      if (written !== SIZE) throw new Error(`${client}: received ${written} of ${SIZE} bytes`);
      rmSync(outDir, { recursive: true, force: true });
      await fetch(`${server.baseUrl}/v1/transfers/${id}`, {
        method: "DELETE",
        headers: { authorization: `Bearer ${env.HANDOFF_API_KEY}` },
      });
      return { send, receive };
    };

    // Warm-up: page cache and the server's first-use paths, outside the figures.
    await transfer("node", 0);
    await transfer("python", 0);
    const runs: Record<Client, Pair[]> = { node: [], python: [] };
    for (let round = 1; round <= RUNS; round++) {
      const order: Client[] = round % 2 === 1 ? ["python", "node"] : ["node", "python"];
      for (const client of order) {
        const pair = await transfer(client, round);
        runs[client].push(pair);
        console.log(
          `run ${round} ${client.padEnd(6)}: send ${describeRun(pair.send, SIZE)}; receive ${describeRun(pair.receive, SIZE)}`,
        );
      }
    }

    const best = (client: Client, step: keyof Pair) => Math.min(...runs[client].map((p) => p[step].ms));
    const peak = (client: Client, step: keyof Pair) => Math.max(...runs[client].map((p) => p[step].peakKb));
    const rate = (ms: number) => `${pad(mibPerSecond(SIZE, ms).toFixed(0), 5)} MiB/s`;
    console.log("");
    console.log(`Best of ${RUNS} (wall time of each process, start-up included; peak = max over runs)`);
    console.log("            python                  node (baseline)         ratio    target");
    let ratiosMet = true;
    let rssMet = true;
    for (const step of ["send", "receive"] as const) {
      const ratio = best("node", step) / best("python", step);
      ratiosMet &&= ratio >= RATIO_TARGET;
      rssMet &&= peak("python", step) <= PYTHON_RSS_LIMIT_KB;
      console.log(
        `  ${step.padEnd(8)}  ${rate(best("python", step))} ${mbText(peak("python", step))}   ` +
          `${rate(best("node", step))} ${mbText(peak("node", step))}   ${pad((ratio * 100).toFixed(1), 5)} %  ` +
          `>= ${RATIO_TARGET * 100} %  ${verdict(ratio >= RATIO_TARGET)}`,
      );
    }
    console.log(`  Python throughput >= ${RATIO_TARGET * 100} % of Node's: ${verdict(ratiosMet)}`);
    console.log(`  peak RSS of every Python process <= 100 MB: ${verdict(rssMet)}`);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await bench?.server.stop();
    temp.cleanup();
  }
}

await main();
