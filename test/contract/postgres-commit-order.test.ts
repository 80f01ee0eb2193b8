import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { upcastMetadata } from "../../src/eventstore/metadata.js";
import type { EventToAppend, RecordedEvent } from "../../src/eventstore/port.js";
import { appendWith, PostgresEventStore } from "../../src/eventstore/postgres.js";
import {
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
  type TestDatabase,
  titled,
} from "../support/databases.js";

function event(type: string): EventToAppend {
  return {
    eventId: randomUUID(),
    type,
    data: {},
    metadata: upcastMetadata(type, { occurredAt: new Date().toISOString() }),
  };
}

/**
 * Sequence values are taken in one order and committed in another. A reader that trusted the
 * global position alone would read the later-numbered event, move past the earlier one while its
 * transaction is still open, and never see it. Needs two connections, so real PostgreSQL only.
 */
describe.skipIf(!postgresServer)(titled("out-of-order commits on PostgreSQL", postgresSkipReason), () => {
  let database: TestDatabase;
  let store: PostgresEventStore;
  beforeAll(async () => {
    database = await migratedDatabase("postgres");
    store = new PostgresEventStore(database.db);
  });
  afterAll(async () => database?.close());

  it("never lets a reader or subscriber skip an event whose transaction commits last", async () => {
    const start = await store.headPosition();
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribe({
      from: start,
      handle: async (batch) => {
        seen.push(...batch);
      },
    });
    try {
      const slow = await database.db.transaction();
      // The slow writer takes the lower global position first...
      await appendWith(slow, [
        {
          streamId: `slow-${randomUUID()}`,
          expected: "no_stream",
          events: [event("Slow")],
        },
      ]);
      // ...then a fast writer takes a higher one and commits first.
      await store.append(`fast-${randomUUID()}`, "no_stream", [event("Fast")]);

      const whileOpen = await store.readAll(start, 100);
      expect(whileOpen.map((e) => e.type)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(seen.map((e) => e.type)).toEqual([]);

      await slow.commit();
      const afterCommit = await store.readAll(start, 100);
      expect(afterCommit.map((e) => e.type)).toEqual(["Slow", "Fast"]);
      const deadline = Date.now() + 5000;
      while (seen.length < 2 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(seen.map((e) => e.type)).toEqual(["Slow", "Fast"]);
    } finally {
      await subscription.stop();
    }
  });
});
