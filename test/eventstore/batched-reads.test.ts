import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { NO_STREAM } from "../../src/eventstore/port.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import { event } from "../contract/event-store.contract.js";
import { migratedDatabase, type TestDatabase } from "../support/databases.js";

/**
 * The embedded database runs one statement at a time: a hundred commands that each read a stream
 * at once must not queue a hundred statements (a request link's senders all arriving together).
 */
describe("stream reads asked for at once on the embedded database", () => {
  let database: TestDatabase;
  afterEach(async () => database?.close());

  it("go in a few statements, each answered with its own stream", async () => {
    database = await migratedDatabase("pglite");
    const store = new PostgresEventStore(database.db, { soleWriter: true });
    const ids = Array.from({ length: 100 }, () => `link-${randomUUID()}`);
    for (const id of ids) await store.append(id, NO_STREAM, [event("Opened", { id })]);

    let statements = 0;
    database.db.on("query", () => statements++);
    const read = await Promise.all(ids.map((id) => store.readStream(id)));

    expect(read.map((events) => events.map((e) => e.data.id))).toEqual(ids.map((id) => [id]));
    expect(statements).toBeLessThanOrEqual(3);
  });

  it("give subscriptions woken by one append one read of the log, each its own types and batch size", async () => {
    database = await migratedDatabase("pglite");
    const store = new PostgresEventStore(database.db, { soleWriter: true });
    const start = await store.headPosition();
    const id = `mixed-${randomUUID()}`;
    await store.append(id, NO_STREAM, [event("A"), event("B"), event("C"), event("A")]);

    let statements = 0;
    database.db.on("query", () => statements++);
    const asked = [
      { types: ["A"], batchSize: 500 },
      { types: ["B", "C"], batchSize: 500 },
      { types: undefined, batchSize: 2 },
      { types: ["C"], batchSize: 3 },
    ];
    const firstBatches = await Promise.all(
      asked.map(
        ({ types, batchSize }) =>
          new Promise<string[]>((resolve) => {
            const subscription = store.subscribe({
              from: start,
              batchSize,
              ...(types ? { types } : {}),
              handle: async (batch) => {
                resolve(batch.filter((e) => e.streamId === id).map((e) => e.type));
                void subscription.stop();
              },
            });
          }),
      ),
    );

    expect(firstBatches).toEqual([["A", "A"], ["B", "C"], ["A", "B"], ["C"]]);
    expect(statements).toBeLessThanOrEqual(2);
  });
});
