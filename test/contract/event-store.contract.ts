import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ANY,
  type EventStore,
  type EventToAppend,
  NO_STREAM,
  type RecordedEvent,
  WrongExpectedVersionError,
} from "../../src/eventstore/port.js";

export interface StoreUnderTest {
  store: EventStore;
  close(): Promise<void>;
}

const stream = (label: string) => `contract_${label}-${randomUUID()}`;

/** An event of `type` as a system actor records it (also the reactor's test's). */
export function event(type: string, data: Record<string, unknown> = {}): EventToAppend {
  return {
    eventId: randomUUID(),
    type,
    data,
    metadata: {
      schemaVersion: 2,
      occurredAt: "2026-01-01T00:00:00.000Z",
      actorKind: "system",
      accountId: null,
      keyId: null,
      agentId: null,
      requestId: null,
    },
  };
}

const types = (events: RecordedEvent[]) => events.map((e) => e.type);

async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The event store contract: every adapter must pass every case. */
export function eventStoreContract(
  title: string,
  open: (() => Promise<StoreUnderTest>) | null,
  skipReason = "",
) {
  describe.skipIf(open === null)(skipReason ? `${title} (skipped: ${skipReason})` : title, () => {
    let subject: StoreUnderTest;
    let store: EventStore;
    beforeAll(async () => {
      subject = await (open as () => Promise<StoreUnderTest>)();
      store = subject.store;
    });
    afterAll(async () => subject?.close());

    it("creates a stream with no_stream and rejects a second create-only append", async () => {
      const id = stream("create");
      const first = await store.append(id, NO_STREAM, [event("A"), event("B")]);
      expect(first.revision).toBe(1);
      await expect(store.append(id, NO_STREAM, [event("C")])).rejects.toBeInstanceOf(
        WrongExpectedVersionError,
      );
      expect(types(await store.readStream(id))).toEqual(["A", "B"]);
    });

    it("lets exactly one of several concurrent create-only appends win", async () => {
      const id = stream("race");
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => store.append(id, NO_STREAM, [event(`W${i}`)])),
      );
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r) => r.status === "rejected");
      expect(won).toHaveLength(1);
      for (const r of lost)
        expect((r as PromiseRejectedResult).reason).toBeInstanceOf(WrongExpectedVersionError);
      expect(await store.readStream(id)).toHaveLength(1);
    });

    it("appends at an exact revision and rejects a stale one, naming the actual revision", async () => {
      const id = stream("exact");
      await store.append(id, NO_STREAM, [event("A")]);
      const second = await store.append(id, 0, [event("B")]);
      expect(second.revision).toBe(1);
      const stale = store.append(id, 0, [event("C")]);
      await expect(stale).rejects.toMatchObject({ name: "WrongExpectedVersionError", actual: 1 });
      await expect(store.append(stream("missing"), 3, [event("X")])).rejects.toBeInstanceOf(
        WrongExpectedVersionError,
      );
      expect(types(await store.readStream(id))).toEqual(["A", "B"]);
    });

    it("lets exactly one of several concurrent appends at the same revision win", async () => {
      const id = stream("exact_race");
      await store.append(id, NO_STREAM, [event("A")]);
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, (_, i) => store.append(id, 0, [event(`W${i}`)])),
      );
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      expect(await store.readStream(id)).toHaveLength(2);
    });

    it("appends with any whatever the stream holds", async () => {
      const id = stream("any");
      await store.append(id, ANY, [event("A")]);
      const result = await store.append(id, ANY, [event("B"), event("C")]);
      expect(result.revision).toBe(2);
      expect((await store.readStream(id)).map((e) => e.revision)).toEqual([0, 1, 2]);
    });

    it("reads a stream from a revision on, and [] past its end", async () => {
      const id = stream("from-revision");
      await store.append(id, NO_STREAM, [event("A"), event("B"), event("C")]);
      expect(types(await store.readStream(id, 1))).toEqual(["B", "C"]);
      expect((await store.readStream(id, 2)).map((e) => e.revision)).toEqual([2]);
      expect(await store.readStream(id, 3)).toEqual([]);
    });

    it("reads several streams at once, each from its own revision, as readStream would", async () => {
      const first = stream("several-a");
      const second = stream("several-b");
      await store.append(first, NO_STREAM, [event("A1"), event("A2"), event("A3")]);
      await store.append(second, NO_STREAM, [event("B1"), event("B2")]);
      const [fromFirst, fromMissing, fromSecond] = await store.readStreams([
        { streamId: first, fromRevision: 1 },
        { streamId: stream("several-missing"), fromRevision: 0 },
        { streamId: second, fromRevision: 0 },
      ]);
      expect(fromFirst).toEqual(await store.readStream(first, 1));
      expect(types(fromFirst ?? [])).toEqual(["A2", "A3"]);
      expect(fromMissing).toEqual([]);
      expect(types(fromSecond ?? [])).toEqual(["B1", "B2"]);
    });

    it("answers reads asked for at once as each alone, the same stream from different revisions too", async () => {
      const busy = stream("at-once");
      const quiet = stream("at-once-quiet");
      await store.append(busy, NO_STREAM, [event("A"), event("B"), event("C")]);
      await store.append(quiet, NO_STREAM, [event("Q")]);
      const asked = [
        { streamId: busy, fromRevision: 2 },
        { streamId: quiet, fromRevision: 0 },
        { streamId: busy, fromRevision: 0 },
        { streamId: stream("at-once-missing"), fromRevision: 0 },
        { streamId: busy, fromRevision: 1 },
      ];
      const together = await Promise.all(
        asked.map((read) => store.readStream(read.streamId, read.fromRevision)),
      );
      expect(together.map(types)).toEqual([["C"], ["Q"], ["A", "B", "C"], [], ["B", "C"]]);
      for (const [i, read] of asked.entries()) {
        expect(together[i]).toEqual(await store.readStream(read.streamId, read.fromRevision));
      }
    });

    it("reads a stream in revision order with data and metadata intact, and [] for a missing one", async () => {
      const id = stream("read");
      await store.append(id, NO_STREAM, [event("A", { n: 1, nested: { ok: true } }), event("B", { n: 2 })]);
      const events = await store.readStream(id);
      expect(events.map((e) => [e.streamId, e.revision, e.type, e.data])).toEqual([
        [id, 0, "A", { n: 1, nested: { ok: true } }],
        [id, 1, "B", { n: 2 }],
      ]);
      expect(events[0]?.metadata).toMatchObject({ schemaVersion: 2, occurredAt: "2026-01-01T00:00:00.000Z" });
      expect(await store.readStream(stream("never"))).toEqual([]);
    });

    it("appends to several streams atomically: all or nothing", async () => {
      const a = stream("multi_a");
      const b = stream("multi_b");
      await store.append(b, NO_STREAM, [event("B0")]);
      await expect(
        store.appendMany([
          { streamId: a, expected: NO_STREAM, events: [event("A0")] },
          { streamId: b, expected: NO_STREAM, events: [event("B1")] },
        ]),
      ).rejects.toBeInstanceOf(WrongExpectedVersionError);
      expect(await store.readStream(a)).toEqual([]);
      expect(types(await store.readStream(b))).toEqual(["B0"]);

      const { position } = await store.appendMany([
        { streamId: a, expected: NO_STREAM, events: [event("A0")] },
        { streamId: b, expected: 0, events: [event("B1")] },
      ]);
      expect(types(await store.readStream(a))).toEqual(["A0"]);
      expect(types(await store.readStream(b))).toEqual(["B0", "B1"]);
      const lastOfB = (await store.readStream(b))[1];
      expect(position >= (lastOfB?.position ?? "")).toBe(true);
    });

    it("stores an event id appended twice once", async () => {
      const id = stream("dedupe");
      const once = [event("A"), event("B")];
      const first = await store.append(id, NO_STREAM, once);
      const again = await store.append(id, NO_STREAM, once);
      expect(again.revision).toBe(first.revision);
      expect(types(await store.readStream(id))).toEqual(["A", "B"]);
    });

    it("reads all from a position in commit order, strictly after it", async () => {
      const a = stream("all");
      const c = stream("all_other");
      const ours = (events: RecordedEvent[]) => events.filter((e) => e.streamId === a || e.streamId === c);
      const start = await store.append(stream("all_start"), NO_STREAM, [event("Start")]);
      await store.append(a, NO_STREAM, [event("A")]);
      await store.append(a, 0, [event("B")]);
      const last = await store.append(c, NO_STREAM, [event("C")]);
      // On PostgreSQL a transaction open anywhere on the server holds readers back for a while.
      await waitUntil(async () => (await store.headPosition()) === last.position);
      const all = ours(await store.readAll(start.position, 1000));
      expect(types(all)).toEqual(["A", "B", "C"]);
      const positions = all.map((e) => e.position);
      expect([...positions].sort()).toEqual(positions);
      expect(new Set(positions).size).toBe(positions.length);
      expect(positions.every((p) => p > start.position)).toBe(true);
      expect(all[2]?.position).toBe(last.position);
      const first = all[0]?.position ?? null;
      expect(types(ours(await store.readAll(first, 1000)))).toEqual(["B", "C"]);
      expect(types(await store.readAll(first, 1))).toEqual(["B"]);
    });

    it("catches up from a checkpoint, then delivers new events live, in order", async () => {
      const id = stream("sub");
      const checkpoint = (await store.append(id, NO_STREAM, [event("A")])).position;
      await store.append(id, 0, [event("B")]);
      const seen: RecordedEvent[] = [];
      const subscription = store.subscribe({
        from: checkpoint,
        handle: async (batch) => {
          seen.push(...batch.filter((e) => e.streamId === id));
        },
      });
      try {
        await waitUntil(() => seen.length === 1);
        await store.append(id, 1, [event("C")]);
        await waitUntil(() => seen.length === 2);
        expect(types(seen)).toEqual(["B", "C"]);
      } finally {
        await subscription.stop();
      }
    });

    it("hands a subscriber only the types it asks for, with their data, and goes on past the others", async () => {
      const id = stream("typed");
      const from = await store.headPosition();
      const wanted = (n: number) => event("Wanted", { n, note: "kept" });
      // More events it does not want than one batch holds, between the ones it does.
      const others = Array.from({ length: 12 }, (_, n) => event("Other", { n }));
      await store.append(id, NO_STREAM, [wanted(1), ...others, wanted(2)]);
      const seen: RecordedEvent[] = [];
      const batches: number[] = [];
      let readTo: string | null = null;
      const subscription = store.subscribe({
        from,
        batchSize: 5,
        types: ["Wanted"],
        handle: async (batch) => {
          batches.push(batch.length);
          seen.push(...batch.filter((e) => e.streamId === id));
        },
        read: async (to) => {
          readTo = to;
        },
      });
      try {
        await waitUntil(() => seen.length === 2);
        await store.append(id, 13, [event("Other"), wanted(3)]);
        await waitUntil(() => seen.length === 3);
        // Only events it does not want: it hands over nothing, and says how far it read.
        const others = await store.append(id, 15, [event("Other"), event("Other")]);
        await waitUntil(() => readTo === others.position);
        expect(seen).toHaveLength(3);
        expect(types(seen)).toEqual(["Wanted", "Wanted", "Wanted"]);
        expect(seen.map((e) => e.data)).toEqual([1, 2, 3].map((n) => ({ n, note: "kept" })));
        expect(seen.map((e) => e.metadata.occurredAt)).toEqual(Array(3).fill("2026-01-01T00:00:00.000Z"));
        expect(seen.map((e) => e.revision)).toEqual([0, 13, 15]);
        // A read that found none of its types hands over nothing at all.
        expect(batches.every((size) => size > 0)).toBe(true);
      } finally {
        await subscription.stop();
      }
    });

    it("waits for a batch to be handled before delivering the next", async () => {
      const id = stream("backpressure");
      const from = await store.headPosition();
      await store.append(id, NO_STREAM, [event("A"), event("B"), event("C")]);
      let inFlight = 0;
      let maxInFlight = 0;
      const seen: string[] = [];
      const subscription = store.subscribe({
        from,
        batchSize: 1,
        handle: async (batch) => {
          inFlight++;
          maxInFlight = Math.max(maxInFlight, inFlight);
          await new Promise((resolve) => setTimeout(resolve, 10));
          seen.push(...types(batch.filter((e) => e.streamId === id)));
          inFlight--;
        },
      });
      try {
        await waitUntil(() => seen.length === 3);
        expect(seen).toEqual(["A", "B", "C"]);
        expect(maxInFlight).toBe(1);
      } finally {
        await subscription.stop();
      }
    });
  });
}
