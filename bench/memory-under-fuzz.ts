/**
 * Where memory goes under a fuzz-like load (docs/security.md, finding 9): runs the service and its
 * HTTP app in this process on a temp DATA_DIR, sends ROUNDS × PER_ROUND random requests over the
 * app's routes, and prints heap and RSS after a forced GC between rounds. A leak shows as heap
 * growing round after round; a plateau is caches and allocator slack.
 *
 *   node --expose-gc --conditions=source --import tsx bench/memory-under-fuzz.ts [rounds] [perRound]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.js";
import { buildApp } from "../src/http/app.js";
import { openService } from "../src/service.js";

const ROUNDS = Number(process.argv[2] ?? 6);
const PER_ROUND = Number(process.argv[3] ?? 1000);
const ADMIN = "bench-admin-token-0123456789";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --expose-gc");
const mb = (bytes: number) => Math.round(bytes / 1024 / 1024);

let seed = 42;
const rand = (n: number) => {
  seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
  return seed % n;
};
const pick = <T>(items: T[]): T => items[rand(items.length)] as T;

const dir = mkdtempSync(join(tmpdir(), "handoff-mem-"));
const service = await openService(loadConfig({ DATA_DIR: dir, ADMIN_TOKEN: ADMIN, TEST_CLOCK: "1" }));
const app = await buildApp(service);
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
if (!address || typeof address === "string") throw new Error("not listening");
const base = `http://127.0.0.1:${address.port}`;

const created = await (
  await fetch(`${base}/v1/admin/accounts`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
    body: JSON.stringify({ email: "mem@example.com", plan: "scale" }),
  })
).json();
const apiKey = (created as { api_key: { api_key: string } }).api_key.api_key;
const document = (await (await fetch(`${base}/docs/json`)).json()) as { paths: Record<string, object> };
const routes = Object.entries(document.paths).flatMap(([path, operations]) =>
  Object.keys(operations).map((method) => ({ method: method.toUpperCase(), path })),
);
const params = ["%ZZ", "a".repeat(3000), "tr_000000000000000000000000", "alice", "x"];
const bodies = [
  () => JSON.stringify({ agent_id: `a${rand(1e9)}`, name: "n".repeat(rand(300)) }),
  () => `${"[".repeat(5000)}${"]".repeat(5000)}`,
  () => JSON.stringify({ email: `m${rand(1e9)}@example.com`, plan: "free" }),
  () => JSON.stringify({ metadata: { k: "v".repeat(rand(20_000)) } }),
  () => "{bad json",
  () => JSON.stringify({ a: "x".repeat(1024 * 1024 - 100) }),
];

async function one(): Promise<number> {
  const route = pick(routes);
  const path = route.path.replace(/\{[^}]+\}/g, () => pick(params));
  const withBody = route.method !== "GET" && route.method !== "DELETE";
  const response = await fetch(`${base}${path}`, {
    method: route.method,
    headers: {
      authorization: `Bearer ${pick([apiKey, apiKey, ADMIN, "hnd_x"])}`,
      ...(withBody ? { "content-type": "application/json" } : {}),
      ...(rand(3) === 0 ? { "idempotency-key": `k${rand(1e9)}` } : {}),
    },
    ...(withBody ? { body: pick(bodies)() } : {}),
  }).catch(() => null);
  await response?.arrayBuffer().catch(() => null);
  return response?.status ?? 0;
}

function report(label: string) {
  gc?.();
  const { rss, heapUsed, external, arrayBuffers } = process.memoryUsage();
  console.log(
    `${label.padEnd(10)} rss ${mb(rss)} MB  heap ${mb(heapUsed)} MB  external ${mb(external)} MB  buffers ${mb(arrayBuffers)} MB`,
  );
}

report("start");
let fiveHundreds = 0;
for (let round = 1; round <= ROUNDS; round++) {
  for (let sent = 0; sent < PER_ROUND; sent += 8) {
    const statuses = await Promise.all(Array.from({ length: 8 }, one));
    fiveHundreds += statuses.filter((status) => status >= 500).length;
  }
  report(`round ${round}`);
}
console.log(`5xx answers: ${fiveHundreds}`);
await app.close();
await service.close();
rmSync(dir, { recursive: true, force: true });
