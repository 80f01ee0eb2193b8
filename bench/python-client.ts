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
 * Environment: BENCH_PYTHON_SIZE_MIB (default 1024), BENCH_PYTHON_RUNS (default 2: best of),
 * BENCH_PYTHON_DATABASE (`embedded`, the default, or `postgres`: the server on a fresh database of
 * BENCH_POSTGRES_URL, for a machine too busy for PGlite to start in time; both clients share it).
 * Targets (issue 24): Python's throughput >= 80 % of Node's for each step; peak RSS of each Python
 * process <= 100 MB.
 */
import { createWriteStream } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import {
  type ClientBench,
  type ClientRun,
  describeRun,
  mbText,
  requireTime,
  sendAndReceive,
  startClientBench,
  timedCommand,
  timedHandoff,
} from "./client-process.js";
import {
  benchDatabase,
  guard,
  loadAverage,
  MiB,
  mibPerSecond,
  pad,
  patternSource,
  ROOT,
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
  const database = process.env.BENCH_PYTHON_DATABASE === "postgres" ? await benchDatabase() : null;
  try {
    const started = await startClientBench(temp.dir, "bench", database ? { DATABASE_URL: database.url } : {});
    bench = started;
    const source = join(temp.dir, "payload.bin");
    await pipeline(patternSource(SIZE), createWriteStream(source));

    const transfer = (client: Client, round: number): Promise<Pair> =>
      sendAndReceive(started, source, join(temp.dir, `out-${client}-${round}`), (args, env) =>
        run(client, args, env),
      );

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
    console.log(
      "            python                  node (baseline)         ratio    target          python peak RSS target",
    );
    let ratiosMet = true;
    let rssMet = true;
    for (const step of ["send", "receive"] as const) {
      const ratio = best("node", step) / best("python", step);
      const rssUnder = peak("python", step) <= PYTHON_RSS_LIMIT_KB;
      ratiosMet &&= ratio >= RATIO_TARGET;
      rssMet &&= rssUnder;
      console.log(
        `  ${step.padEnd(8)}  ${rate(best("python", step))} ${mbText(peak("python", step))}   ` +
          `${rate(best("node", step))} ${mbText(peak("node", step))}   ${pad((ratio * 100).toFixed(1), 5)} %  ` +
          `>= ${RATIO_TARGET * 100} %  ${verdict(ratio >= RATIO_TARGET)}   ${mbText(peak("python", step))} <= 100 MB  ` +
          verdict(rssUnder),
      );
    }
    console.log(`  Python throughput >= ${RATIO_TARGET * 100} % of Node's: ${verdict(ratiosMet)}`);
    console.log(`  peak RSS of every Python process <= 100 MB: ${verdict(rssMet)}`);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await bench?.server.stop();
    await database?.drop();
    temp.cleanup();
  }
}

await main();
