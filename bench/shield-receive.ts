/**
 * Shield's cost where the target is set (issue 13): the real `handoff receive` of one encrypted file
 * (a child process, `node dist/src/cli.js`, against the server from dist) with `--shield standard`
 * against `--shield off`, alternating, on the same transfer in the same run. Two files: prose that
 * uses the override patterns' words harmlessly (the worst case: every byte is searched, nothing is
 * found) and random bytes (binary: only the first bytes are looked at). Prints each process's wall
 * time, CPU seconds and peak RSS; figures only, never a timed test.
 *
 *   npm run bench -- shield
 *
 * Environment: BENCH_SHIELD_SIZE_MIB (default 1024), BENCH_SHIELD_RUNS (default 3: best of),
 * BENCH_CLIENT_NODE_ARGS (node flags for the client processes).
 * Targets (issue 13): standard >= 90 % of off's throughput; peak RSS <= 150 MB per process.
 */
import { createWriteStream, rmSync, statSync } from "node:fs";
import { cpus } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  type ClientBench,
  type ClientRun,
  describeRun,
  mbText,
  RSS_LIMIT_KB,
  requireTime,
  startClientBench,
  timedHandoff,
} from "./client-process.js";
import {
  guard,
  loadAverage,
  MiB,
  mibPerSecond,
  pad,
  patternSource,
  proseSource,
  syncDisks,
  tempRoot,
  verdict,
} from "./support.js";

const SIZE = Number(process.env.BENCH_SHIELD_SIZE_MIB ?? 1024) * MiB;
const RUNS = Number(process.env.BENCH_SHIELD_RUNS ?? 3);
const RATIO_TARGET = 0.9;
const LEVELS = ["off", "standard"] as const;
const FILES: { name: string; label: string; source: (size: number) => Readable }[] = [
  { name: "prose.txt", label: "text (prose)", source: proseSource },
  { name: "random.bin", label: "binary (random)", source: patternSource },
];

async function main(): Promise<void> {
  guard(9 * 60 * 1000, "shield-receive");
  requireTime();
  const temp = tempRoot("handoff-bench-shield");
  console.log(
    `# Shield on handoff receive: ${SIZE / MiB} MiB encrypted, --shield standard against off, best of ${RUNS}; ` +
      `node ${process.version}, ${cpus().length} CPUs, load average ${loadAverage()}`,
  );
  let bench: ClientBench | null = null;
  try {
    bench = await startClientBench(temp.dir, "shield");
    const { env, sender, receiver } = bench;

    let met = true;
    const table: string[] = [];
    for (const file of FILES) {
      const path = join(temp.dir, file.name);
      await pipeline(file.source(SIZE), createWriteStream(path));
      const sent = await timedHandoff(
        ["send", "--identity", sender.identity, "--to", "shield-receiver", "--max-downloads", "100", path],
        env,
      );
      rmSync(path);
      const id = (JSON.parse(sent.stdout) as { id: string }).id;
      const receive = async (level: (typeof LEVELS)[number], run: number): Promise<ClientRun> => {
        const outDir = join(temp.dir, `out-${level}-${run}`);
        syncDisks();
        const result = await timedHandoff(
          ["receive", id, "--identity", receiver.identity, "--out", outDir, "--shield", level],
          env,
        );
        const written = statSync(join(outDir, file.name)).size;
        if (written !== SIZE)
          throw new Error(`${file.label}, ${level}: received ${written} of ${SIZE} bytes`);
        rmSync(outDir, { recursive: true, force: true });
        return result;
      };
      await receive("off", 0); // warm-up: page cache and first-use paths, outside the figures
      const runs = { off: [] as ClientRun[], standard: [] as ClientRun[] };
      for (let run = 1; run <= RUNS; run++) {
        // Alternating which goes first, as client-transfer.ts does (a warm or cold page cache on this VM).
        for (const level of run % 2 === 1 ? LEVELS : [...LEVELS].reverse()) {
          const result = await receive(level, run);
          runs[level].push(result);
          console.log(`${file.label.padEnd(16)} run ${run} ${level.padEnd(8)}: ${describeRun(result, SIZE)}`);
        }
      }
      const best = (list: ClientRun[]) => Math.min(...list.map((r) => r.ms));
      const peak = (list: ClientRun[]) => Math.max(...list.map((r) => r.peakKb));
      const cpu = (list: ClientRun[]) =>
        Math.min(...list.map((r) => r.userSeconds + r.systemSeconds)).toFixed(2);
      const ratio = best(runs.off) / best(runs.standard);
      const rssOk = [...runs.off, ...runs.standard].every((r) => r.peakKb <= RSS_LIMIT_KB);
      met &&= ratio >= RATIO_TARGET && rssOk;
      const rate = (ms: number) => `${pad(mibPerSecond(SIZE, ms).toFixed(0), 5)} MiB/s`;
      table.push(
        `  ${file.label.padEnd(16)} ${rate(best(runs.standard))} ${mbText(peak(runs.standard))} ${pad(cpu(runs.standard), 5)} s   ` +
          `${rate(best(runs.off))} ${mbText(peak(runs.off))} ${pad(cpu(runs.off), 5)} s   ` +
          `${pad((ratio * 100).toFixed(1), 5)} %  >= ${RATIO_TARGET * 100} %  ${verdict(ratio >= RATIO_TARGET)}  RSS ${verdict(rssOk)}`,
      );
    }
    console.log("");
    console.log(
      `Best of ${RUNS} (wall time of each process, Node start-up included; peak = max over runs; CPU = least)`,
    );
    console.log(
      "  file             standard                          off                               ratio",
    );
    for (const line of table) console.log(line);
    console.log(`  standard >= ${RATIO_TARGET * 100} % of off, peak RSS <= 150 MB: ${verdict(met)}`);
    console.log(`load average at the end: ${loadAverage()}`);
  } finally {
    await bench?.server.stop();
    temp.cleanup();
  }
}

await main();
