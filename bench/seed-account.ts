/**
 * A seeded history on an account of a running server (bench/audit.ts, the small benchmark's grown
 * mode). Apart from bench/seed-events.ts, which tests import, so that they do not load the benchmark
 * support's process handlers.
 */
import type { Knex } from "knex";
import { PostgresEventStore } from "../src/eventstore/postgres.js";
import { seedTransfers } from "./seed-events.js";
import { createAccount, registerAgent, requestJson, type ServerChild, sleep } from "./support.js";

/** An account of a running server whose history was seeded. */
export interface SeededAccount {
  accountId: string;
  apiKey: string;
}

/**
 * A history of `transfers` transfer lives on a new account of the running `server` (its two agents
 * registered through the API), appended to its database `db` through the event store; resolves
 * once the server's projections have caught up (/readyz answers 200 again).
 */
export async function seedAccountHistory(
  server: ServerChild,
  db: Knex,
  transfers: number,
  account: { email: string; plan: string },
): Promise<SeededAccount> {
  const made = await createAccount(server.baseUrl, account.email, account.plan);
  await registerAgent(server.baseUrl, made.apiKey, "bench-sender");
  await registerAgent(server.baseUrl, made.apiKey, "bench-recipient");
  const agents = await requestJson<{ agents: { id: string; agent_id: string }[] }>(
    "GET",
    `${server.baseUrl}/v1/agents`,
    { headers: { authorization: `Bearer ${made.apiKey}` } },
  );
  const id = (slug: string) => agents.json.agents.find((a) => a.agent_id === slug)?.id as string;
  await seedTransfers(new PostgresEventStore(db), transfers, {
    accountId: made.accountId,
    sender: id("bench-sender"),
    recipient: id("bench-recipient"),
  });
  // The running server projects them as they land; /readyz answers 503 while a projection is behind.
  const caughtUp = Date.now();
  for (;;) {
    const ready = await requestJson("GET", `${server.baseUrl}/readyz`);
    if (ready.status === 200) break;
    await sleep(200);
  }
  console.log(`  the server's projections caught up ${((Date.now() - caughtUp) / 1000).toFixed(1)} s later`);
  return { accountId: made.accountId, apiKey: made.apiKey };
}
