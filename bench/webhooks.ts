/**
 * Webhook delivery (issue 23): on PostgreSQL (a fresh database), 1,000 transfers to 10 agents whose
 * webhooks point at a local receiver that always answers 200: every message must arrive exactly
 * once; p50/p99 from the commit (the event's time, the body's `timestamp`) to the receiver. Then a
 * receiver that fails the first two attempts of every message: each must arrive on its third,
 * after 5 s and 1 min on the service's clock (moved by the test clock, so the run takes seconds).
 *
 *   npm run build && node --import tsx bench/webhooks.ts
 *
 * Environment: BENCH_WEBHOOK_TRANSFERS (default 1000), BENCH_WEBHOOK_AGENTS (10),
 * BENCH_WEBHOOK_CLIENTS (16 concurrent senders), BENCH_WEBHOOK_RETRIED (100 transfers in the second
 * part), BENCH_POSTGRES_URL. Target: p99 ≤ 250 ms.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import knex from "knex";
import {
  ADMIN_TOKEN,
  benchDatabase,
  createAccount,
  createTransfer,
  guard,
  KeyPool,
  loadAverage,
  pad,
  percentileOf,
  registerAgent,
  requestJson,
  type ServerChild,
  sleep,
  startHandoff,
  tempRoot,
  verdict,
} from "./support.js";

const TRANSFERS = Number(process.env.BENCH_WEBHOOK_TRANSFERS ?? 1000);
const AGENTS = Number(process.env.BENCH_WEBHOOK_AGENTS ?? 10);
const CLIENTS = Number(process.env.BENCH_WEBHOOK_CLIENTS ?? 16);
const RETRIED = Number(process.env.BENCH_WEBHOOK_RETRIED ?? 100);
const CREATES_PER_KEY = 60;
const SENDER = "bench-sender";
const TARGET_P99_MS = 250;

guard(8 * 60 * 1000, "bench/webhooks.ts");

/** The local receiver: per message id, when each request came and what it was answered. */
class Receiver {
  readonly arrivals = new Map<string, { at: number; status: number }[]>();
  /** Commit-to-arrival delays of the messages answered 200, in ms. */
  readonly delays: number[] = [];
  failFirst = 0;
  url = "";
  private readonly server = createServer((request, response) => this.handle(request, response));

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const at = Date.now();
      const id = String(request.headers["webhook-id"]);
      const seen = this.arrivals.get(id) ?? [];
      const status = seen.length < this.failFirst ? 500 : 200;
      seen.push({ at, status });
      this.arrivals.set(id, seen);
      if (status === 200)
        this.delays.push(at - Date.parse(JSON.parse(Buffer.concat(chunks).toString()).timestamp));
      response.writeHead(status).end();
    });
  }

  delivered(): number {
    return [...this.arrivals.values()].filter((list) => list.some((a) => a.status === 200)).length;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

async function setWebhook(server: ServerChild, apiKey: string, slug: string, url: string): Promise<void> {
  const agents = await requestJson<{ agents: { id: string; agent_id: string }[] }>(
    "GET",
    `${server.baseUrl}/v1/agents`,
    {
      headers: { authorization: `Bearer ${apiKey}` },
    },
  );
  const agent = agents.json.agents.find((a) => a.agent_id === slug);
  const answer = await requestJson("PATCH", `${server.baseUrl}/v1/agents/${agent?.id}`, {
    headers: { authorization: `Bearer ${apiKey}` },
    body: { webhook_url: url },
  });
  if (answer.status !== 200) throw new Error(`set webhook of ${slug}: ${answer.status}`);
}

/** `count` transfers from SENDER, round-robin over the agents, by CLIENTS concurrent clients. */
async function sendTransfers(server: ServerChild, pool: KeyPool, count: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < count) {
        const n = next++;
        const created = await createTransfer(server.baseUrl, await pool.take(), {
          sender: SENDER,
          recipient: `agent-${n % AGENTS}`,
          size: 256,
        });
        if (created.status !== 201)
          throw new Error(`transfer ${n}: ${created.status} ${JSON.stringify(created.json)}`);
      }
    }),
  );
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (check()) return true;
    await sleep(50);
  }
  return check();
}

async function main(): Promise<void> {
  const { dir, cleanup } = tempRoot("handoff-bench-webhooks-");
  const database = await benchDatabase();
  const receiver = new Receiver();
  await receiver.start();
  const server = await startHandoff({
    dataDir: join(dir, "data"),
    env: { DATABASE_URL: database.url, WEBHOOKS_ALLOW_PRIVATE: "1", TEST_CLOCK: "1" },
  });
  try {
    const account = await createAccount(server.baseUrl, "bench-webhooks@example.com", "enterprise");
    await registerAgent(server.baseUrl, account.apiKey, SENDER);
    for (let i = 0; i < AGENTS; i++) {
      await registerAgent(server.baseUrl, account.apiKey, `agent-${i}`);
      await setWebhook(server, account.apiKey, `agent-${i}`, receiver.url);
    }
    const pool = new KeyPool(server.baseUrl, account.apiKey, CREATES_PER_KEY);
    await pool.fill(Math.ceil((TRANSFERS + RETRIED) / CREATES_PER_KEY) + CLIENTS);

    console.log(
      `webhooks: ${TRANSFERS} transfers to ${AGENTS} agents, ${CLIENTS} clients, load ${loadAverage()}`,
    );
    const start = performance.now();
    await sendTransfers(server, pool, TRANSFERS);
    const sent = performance.now() - start;
    const complete = await waitFor(() => receiver.delivered() >= TRANSFERS, 120_000);
    await sleep(2000); // a duplicate would arrive in this time
    const counts = [...receiver.arrivals.values()].map((list) => list.length);
    const once = counts.length === TRANSFERS && counts.every((n) => n === 1);
    const p50 = percentileOf(receiver.delays, 50);
    const p99 = percentileOf(receiver.delays, 99);
    console.log(
      `  sent in ${(sent / 1000).toFixed(1)} s; messages ${receiver.arrivals.size}, requests ${counts.reduce((a, b) => a + b, 0)}`,
    );
    console.log(`  exactly once: ${verdict(complete && once)}`);
    // Where the time goes: from the commit to the message being queued by the reactor.
    const db = knex({ client: "pg", connection: database.url, pool: { min: 0, max: 1 } });
    const queued = (
      await db("webhook_messages").select(db.raw("extract(epoch from created_at - occurred_at) * 1000 as ms"))
    ).map((row: { ms: string }) => Number(row.ms));
    await db.destroy();
    console.log(
      `  commit → queued: p50 ${pad(percentileOf(queued, 50).toFixed(0), 4)} ms, p99 ${pad(percentileOf(queued, 99).toFixed(0), 4)} ms`,
    );
    console.log(
      `  commit → delivery: p50 ${pad(p50.toFixed(0), 4)} ms, p99 ${pad(p99.toFixed(0), 4)} ms (target ≤ ${TARGET_P99_MS}): ${verdict(p99 <= TARGET_P99_MS)}`,
    );

    receiver.arrivals.clear();
    receiver.failFirst = 2;
    await sendTransfers(server, pool, RETRIED);
    await waitFor(
      () => [...receiver.arrivals.values()].filter((l) => l.length >= 1).length >= RETRIED,
      60_000,
    );
    for (const seconds of [5, 60]) {
      const before = [...receiver.arrivals.values()].reduce((sum, l) => sum + l.length, 0);
      await requestJson("POST", `${server.baseUrl}/v1/admin/clock`, {
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        body: { advance_seconds: seconds },
      });
      await waitFor(
        () => [...receiver.arrivals.values()].reduce((sum, l) => sum + l.length, 0) >= before + RETRIED,
        60_000,
      );
    }
    await sleep(2000);
    const third = [...receiver.arrivals.values()].filter(
      (l) => l.length === 3 && l[0]?.status === 500 && l[1]?.status === 500 && l[2]?.status === 200,
    ).length;
    console.log(
      `  failing the first two attempts: ${third} of ${RETRIED} delivered on the third: ${verdict(third === RETRIED)}`,
    );
  } finally {
    await server.stop();
    await receiver.close();
    await database.drop();
    cleanup();
  }
}

await main();
