import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NO_STREAM, type RecordedEvent } from "../../src/eventstore/port.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import { Reactor } from "../../src/reactors/reactor.js";
import { event } from "../contract/event-store.contract.js";
import { migratedDatabase } from "../support/databases.js";

type Database = Awaited<ReturnType<typeof migratedDatabase>>;

async function waitUntil(condition: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a reactor that reads only its event types", () => {
  let database: Database;
  let store: PostgresEventStore;
  beforeAll(async () => {
    database = await migratedDatabase("pglite");
    store = new PostgresEventStore(database.db);
  });
  afterAll(async () => {
    await store.close();
    await database.close();
  });

  const checkpointOf = async (name: string) =>
    (
      await database
        .db("projection_checkpoints")
        .where({ name: `reactor:${name}` })
        .first()
    )?.position ?? null;

  it("acts on its types only, and its checkpoint moves past the events of other types", async () => {
    const name = `typed-${randomUUID()}`;
    const acted: RecordedEvent[] = [];
    const reactor = new Reactor(
      name,
      store,
      database.db,
      async (batch) => {
        acted.push(...batch);
        return batch.length > 0;
      },
      (error) => {
        throw error;
      },
      { intervalMs: 1, types: ["Wanted"] },
    );
    await reactor.start();
    try {
      const stream = `reactor_test-${randomUUID()}`;
      const wanted = await store.append(stream, NO_STREAM, [event("Other"), event("Wanted")]);
      await waitUntil(async () => (await checkpointOf(name)) === wanted.position);
      expect(acted.map((e) => e.type)).toEqual(["Wanted"]);
      // More events of other types than it lets pass unsaved (SAVE_EVERY): the checkpoint follows them.
      const others = await store.append(
        stream,
        1,
        Array.from({ length: 1001 }, () => event("Other")),
      );
      await waitUntil(async () => (await checkpointOf(name)) !== wanted.position);
      const moved = (await checkpointOf(name)) as string;
      expect(moved > wanted.position && moved <= others.position).toBe(true);
      expect(acted).toHaveLength(1);
    } finally {
      await reactor.stop();
    }
  });
});
