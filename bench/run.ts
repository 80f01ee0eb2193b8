/**
 * Runs the benchmarks in sequence, each in a process of its own, and passes their figures through.
 * `npm run bench` builds first (the benchmarks run the compiled server, dist/src/cli.js).
 *
 *   npm run bench                      every benchmark
 *   npm run bench -- small history     only those named (upload, resumable, small, history, client, shield, shield-loop, web, request-page, python, webhooks, stream, log, instances, growth, requests, rebuild, verify)
 *
 * Each benchmark bounds its own running time (see `guard` in bench/support.ts).
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const BENCHMARKS: Record<string, string> = {
  upload: "bench/transfer-throughput.ts",
  resumable: "bench/resumable-upload.ts",
  small: "bench/small-transfers.ts",
  history: "bench/history.ts",
  client: "bench/client-transfer.ts",
  shield: "bench/shield-receive.ts",
  "shield-loop": "bench/shield.ts",
  web: "bench/web-app.ts",
  "request-page": "bench/request-page.ts",
  audit: "bench/audit.ts",
  python: "bench/python-client.ts",
  webhooks: "bench/webhooks.ts",
  stream: "bench/event-stream.ts",
  log: "bench/transparency.ts",
  instances: "bench/instances.ts",
  growth: "bench/growth.ts",
  requests: "bench/request-links.ts",
  rebuild: "bench/rebuild.ts",
  verify: "bench/export-verify.ts",
};

const named = process.argv.slice(2);
const unknown = named.filter((name) => !(name in BENCHMARKS));
if (unknown.length > 0) {
  console.error(
    `unknown benchmark: ${unknown.join(", ")} (choose from ${Object.keys(BENCHMARKS).join(", ")})`,
  );
  process.exit(2);
}

let failed = 0;
for (const name of named.length > 0 ? named : Object.keys(BENCHMARKS)) {
  const script = BENCHMARKS[name] as string;
  const result = spawnSync(process.execPath, ["--import", "tsx", script], { cwd: ROOT, stdio: "inherit" });
  if (result.status !== 0) {
    failed++;
    console.error(`${script} ended with ${result.status ?? result.signal}`);
  }
  console.log("");
}
process.exit(failed === 0 ? 0 : 1);
