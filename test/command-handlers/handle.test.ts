import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Decider, refuse } from "../../domain/decider.js";
import { handle } from "../../src/command-handlers/handle.js";
import { SnapshotStore } from "../../src/command-handlers/snapshots.js";
import { StreamLock } from "../../src/command-handlers/stream-lock.js";
import type { Actor } from "../../src/command-handlers/streams.js";
import { WrongExpectedVersionError } from "../../src/eventstore/port.js";
import { PostgresEventStore } from "../../src/eventstore/postgres.js";
import {
  migratedDatabase,
  postgresServer,
  postgresSkipReason,
  type TestDatabase,
  titled,
} from "../support/databases.js";

/** A counter that refuses to pass its limit: the smallest decider a quota can be. */
type Added = { type: "Added"; data: { by: number } };
const counter: Decider<{ add: number; limit: number }, Added, { count: number }> = {
  initialState: () => ({ count: 0 }),
  evolve: (state, event) => ({ count: state.count + event.data.by }),
  decide: ({ add, limit }, state) =>
    state.count + add > limit
      ? refuse("QUOTA_EXCEEDED", "over the limit")
      : [{ type: "Added", data: { by: add } }],
};

const alice: Actor = { kind: "api_key", accountId: "a", keyId: "k1" };
const bob: Actor = { kind: "api_key", accountId: "b", keyId: "k2" };

describe.skipIf(!postgresServer)(
  titled("the command handler skeleton on PostgreSQL", postgresSkipReason),
  () => {
    let database: TestDatabase;
    let store: PostgresEventStore;
    let deps: Parameters<typeof handle>[0];

    beforeAll(async () => {
      database = await migratedDatabase("postgres");
      store = new PostgresEventStore(database.db);
      deps = {
        store,
        clock: { now: () => new Date("2026-01-01T00:00:00Z") },
        snapshots: new SnapshotStore(database.db, () => null),
        streamLock: new StreamLock(),
      };
    });
    afterAll(async () => {
      await store.close();
      await database.close();
    });

    const counted = async (streamId: string) => (await store.readStream(streamId)).map((e) => e.data.by);

    it("appends what it decided on several streams in one append, and nothing when one decision is refused", async () => {
      const [first, second] = [`count-${randomUUID()}`, `count-${randomUUID()}`];
      const both = await handle(deps, { actor: alice }, async (turn) => {
        turn.decide(counter, await turn.load(counter, first), { add: 2, limit: 3 }, undefined);
        turn.decide(counter, await turn.load(counter, second), { add: 3, limit: 3 }, undefined);
        return { done: true };
      });
      expect(both.done).toBe(true);
      expect(both.position).not.toBeNull();
      expect([await counted(first), await counted(second)]).toEqual([[2], [3]]);

      const refused = handle(deps, { actor: alice }, async (turn) => {
        turn.decide(counter, await turn.load(counter, first), { add: 1, limit: 3 }, undefined);
        turn.decide(counter, await turn.load(counter, second), { add: 1, limit: 3 }, undefined);
        return {};
      });
      await expect(refused).rejects.toMatchObject({ code: "QUOTA_EXCEEDED" });
      expect([await counted(first), await counted(second)]).toEqual([[2], [3]]);
    });

    it("starts over from the load when another writer got in between, and decides on what it wrote", async () => {
      const streamId = `count-${randomUUID()}`;
      const conflicts: { stream: string; decided: number }[] = [];
      let attempts = 0;
      const adding = handle(
        deps,
        {
          actor: alice,
          onConflict: (error, decided: { seen: number }) =>
            conflicts.push({ stream: error.streamId, decided: decided.seen }),
        },
        async (turn) => {
          attempts++;
          const loaded = await turn.load(counter, streamId);
          turn.decide(counter, loaded, { add: 2, limit: 3 }, undefined);
          // Another writer takes the stream between this load and this append, once.
          if (attempts === 1)
            await handle(deps, { actor: bob }, async (other) => {
              other.decide(counter, await other.load(counter, streamId), { add: 2, limit: 3 }, undefined);
              return {};
            });
          return { seen: loaded.state.count };
        },
      );
      // The second decision sees the other writer's 2: 2 + 2 passes the limit of 3.
      await expect(adding).rejects.toMatchObject({ code: "QUOTA_EXCEEDED" });
      expect(attempts).toBe(2);
      expect(conflicts).toEqual([{ stream: streamId, decided: 0 }]);
      expect(await counted(streamId)).toEqual([2]);
    });

    it("records what several calls put on one stream in one append, in order, each with its actor", async () => {
      const streamId = `count-${randomUUID()}`;
      await handle(deps, {}, async (turn) => {
        const loaded = turn.newStream(counter, streamId);
        turn.record(loaded, [{ type: "Added", data: { by: 1 } }], alice);
        turn.record(loaded, [{ type: "Added", data: { by: 5 } }], bob);
        return {};
      });
      const recorded = await store.readStream(streamId);
      expect(recorded.map((e) => [e.revision, e.data.by, e.metadata.keyId])).toEqual([
        [0, 1, "k1"],
        [1, 5, "k2"],
      ]);
    });

    it("gives up with the conflict after its attempts", async () => {
      const streamId = `count-${randomUUID()}`;
      let attempts = 0;
      const racing = handle(deps, { actor: alice, attempts: 3 }, async (turn) => {
        attempts++;
        const loaded = await turn.load(counter, streamId);
        turn.decide(counter, loaded, { add: 1, limit: 100 }, undefined);
        await handle(deps, { actor: bob }, async (other) => {
          other.decide(counter, await other.load(counter, streamId), { add: 1, limit: 100 }, undefined);
          return {};
        });
        return {};
      });
      await expect(racing).rejects.toBeInstanceOf(WrongExpectedVersionError);
      expect(attempts).toBe(3);
      expect(await counted(streamId)).toEqual([1, 1, 1]);
    });
  },
);
