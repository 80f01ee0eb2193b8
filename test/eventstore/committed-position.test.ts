import { randomUUID } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { NO_STREAM } from "../../src/eventstore/port.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import { event } from "../contract/event-store.contract.js";
import { migratedDatabase, type TestDatabase } from "../support/databases.js";

/**
 * Read-your-writes asks the store for the committed head before every read of the read models. On
 * the embedded database this process is the log's only writer: the head is read once, then known
 * from its own appends.
 */
describe("the committed head of a sole writer (the embedded database)", () => {
  let database: TestDatabase;
  afterEach(async () => database?.close());

  /** Counts the statements `database` runs from now on. */
  function statements() {
    const seen = { count: 0 };
    database.db.on("query", () => seen.count++);
    return seen;
  }

  it("is read once, then follows its own appends without a query", async () => {
    database = await migratedDatabase("pglite");
    const earlier = await new PostgresEventStore(database.db).append(`t-${randomUUID()}`, NO_STREAM, [
      event("Earlier"),
    ]);
    const store = new PostgresEventStore(database.db, { soleWriter: true });

    expect(await store.committedPosition()).toBe(earlier.position);
    const queries = statements();
    expect(await store.committedPosition()).toBe(earlier.position);
    expect(queries.count).toBe(0);

    const appended = await store.append(`t-${randomUUID()}`, NO_STREAM, [event("Mine")]);
    const before = queries.count;
    expect(await store.committedPosition()).toBe(appended.position);
    expect(queries.count).toBe(before);
    expect(await store.headPosition()).toBe(appended.position);
  });

  it("keeps an append that ended while the head was being read", async () => {
    database = await migratedDatabase("pglite");
    const store = new PostgresEventStore(database.db, { soleWriter: true });
    const [head, appended] = await Promise.all([
      store.committedPosition(),
      store.append(`t-${randomUUID()}`, NO_STREAM, [event("Racing")]),
    ]);
    expect([null, appended.position]).toContain(head);
    expect(await store.committedPosition()).toBe(appended.position);
  });

  it("is read each time on a server other processes may append to", async () => {
    database = await migratedDatabase("pglite");
    const store = new PostgresEventStore(database.db);
    const other = new PostgresEventStore(database.db);
    await store.committedPosition();
    const theirs = await other.append(`t-${randomUUID()}`, NO_STREAM, [event("Theirs")]);
    expect(await store.committedPosition()).toBe(theirs.position);
  });
});
