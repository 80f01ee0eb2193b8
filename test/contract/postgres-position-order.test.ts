import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import {
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
  type TestDatabase,
} from "../support/databases.js";

/**
 * Transaction ids grow a digit now and then (99 → 100). Reads must order them as numbers, never
 * as text, or a reader crossing that boundary would re-read old events and skip new ones.
 */
function positionOrderSuite(kind: "pglite" | "postgres") {
  return () => {
    const opened: TestDatabase[] = [];
    afterAll(async () => {
      for (const database of opened) await database.close();
    });

    it("reads transaction 9 before 10, and 99 before 100, across batch boundaries", async () => {
      const database = await migratedDatabase(kind);
      opened.push(database);
      const store = new PostgresEventStore(database.db);
      const stream = `order-${randomUUID()}`;
      const ids = ["9", "10", "99", "100"];
      for (const [revision, transactionId] of ids.entries()) {
        await database.db.raw(
          `insert into events (transaction_id, event_id, stream_id, revision, type, data, metadata)
           values (?::xid8, ?, ?, ?, ?, '{}', '{}')`,
          [transactionId, randomUUID(), stream, revision, `T${transactionId}`],
        );
      }
      const all = (await store.readAll(null, 1000)).filter((e) => e.streamId === stream);
      expect(all.map((e) => e.type)).toEqual(["T9", "T10", "T99", "T100"]);

      const oneByOne: string[] = [];
      let position: string | null = null;
      for (;;) {
        const [next] = await store.readAll(position, 1);
        if (!next) break;
        if (next.streamId === stream) oneByOne.push(next.type);
        position = next.position;
      }
      expect(oneByOne).toEqual(["T9", "T10", "T99", "T100"]);
    });
  };
}

describe("PostgreSQL event store position order on PGlite", positionOrderSuite("pglite"));
describe.skipIf(!postgresServer)(
  postgresSkipReason
    ? `PostgreSQL event store position order (skipped: ${postgresSkipReason})`
    : "PostgreSQL event store position order",
  positionOrderSuite("postgres"),
);
