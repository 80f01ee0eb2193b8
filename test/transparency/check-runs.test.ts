import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import { type LeafHashers, threadHashers } from "../../src/transparency/leaf-hashes.js";
import { TransparencyLog } from "../../src/transparency/log.js";
import { TILE_WIDTH } from "../../src/transparency/tiles.js";
import { waitUntil } from "../http/transfer-helpers.js";
import {
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
  type TestDatabase,
  titled,
} from "../support/databases.js";
import { noteEvent } from "../support/note-events.js";

/** More than four runs of one leaf tile each, the last one short. */
const EVENTS = 4 * TILE_WIDTH + 77;
const RUN = { runLeaves: TILE_WIDTH, runsAhead: 3 };

/** A log of EVENTS events in streams of ten, every one hashed and signed. */
async function signedLog(database: TestDatabase): Promise<TransparencyLog> {
  const store = new PostgresEventStore(database.db);
  for (let stream = 0; stream < EVENTS / 10; stream++) {
    const count = Math.min(10, EVENTS - stream * 10);
    await store.append(
      `note-${stream}`,
      "no_stream",
      Array.from({ length: count }, (_, i) =>
        noteEvent({ text: `note ${stream * 10 + i}`, tags: ["é", "😀"] }),
      ),
    );
  }
  const log = new TransparencyLog(store, database.db, "test.example/handoff", randomBytes(32), (error) => {
    throw error;
  });
  await log.start();
  await waitUntil(async () => (await log.newestCheckpoint())?.size === EVENTS, "every event signed");
  return log;
}

/** The n-th event's global position, in log order. */
async function positionOf(database: TestDatabase, leaf: number): Promise<string> {
  const { rows } = await database.db.raw<{ rows: { global_position: string }[] }>(
    "select global_position::text from events order by transaction_id, global_position offset ? limit 1",
    [leaf],
  );
  return rows[0]?.global_position ?? "";
}

function describeOn(kind: "pglite" | "postgres") {
  const skip = kind === "postgres" && !postgresServer;
  describe.skipIf(skip)(
    titled(`the log check in runs of leaves, on ${kind}`, skip ? postgresSkipReason : ""),
    () => {
      let database: TestDatabase;
      let log: TransparencyLog;
      let hashers: LeafHashers | undefined;
      beforeAll(async () => {
        database = await migratedDatabase(kind);
        log = await signedLog(database);
        // On PostgreSQL, threads of their own read and hash the runs, as `handoff log check` has them.
        if (database.target.kind === "postgres") hashers = threadHashers(database.target.url, 2);
      }, 120_000);
      afterAll(async () => {
        await hashers?.close();
        await log?.stop();
        await database?.close();
      });

      it("checks every leaf and every checkpoint, whatever runs they were read in", async () => {
        expect(await log.check({ ...RUN, hashers })).toEqual({
          ok: true,
          leaves: EVENTS,
          checkpoint: EVENTS,
        });
      });

      it("reads on from where a run really ended when the recorded position of a run's start is wrong", async () => {
        await database.db.raw(
          "update log_leaf_positions set positions = positions || E'\\n' || '1.1' where tile = 1",
        );
        expect(await log.check({ ...RUN, hashers })).toMatchObject({ ok: true, leaves: EVENTS });
      });

      it("names the leaf of an event removed in the middle of a later run", async () => {
        const leaf = 2 * TILE_WIDTH + 40;
        await database.db.raw("delete from events where global_position = ?", [
          await positionOf(database, leaf),
        ]);
        expect(await log.check({ ...RUN, hashers })).toMatchObject({ ok: false, leafIndex: leaf });
      });
    },
  );
}

describeOn("pglite");
describeOn("postgres");
