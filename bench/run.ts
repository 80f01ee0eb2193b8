/**
 * Runs every benchmark in sequence, each in a process of its own, and passes their figures through.
 * `npm run bench` builds first (the benchmarks run the compiled server, dist/src/cli.js).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BENCHMARKS = ["bench/transfer-throughput.ts", "bench/small-transfers.ts", "bench/client-transfer.ts"];
/** Each benchmark stops itself after 9 minutes; this is the backstop. */
const TIMEOUT_MS = 10 * 60 * 1000;

let failed = 0;
for (const script of BENCHMARKS) {
  const result = spawnSync(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    stdio: "inherit",
    timeout: TIMEOUT_MS,
  });
  if (result.status !== 0) {
    failed++;
    console.error(`${script} ended with ${result.status ?? result.signal}`);
  }
  console.log("");
}
process.exit(failed === 0 ? 0 : 1);
