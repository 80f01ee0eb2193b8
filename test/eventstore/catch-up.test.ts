import { afterEach, describe, expect, it } from "vitest";
import { AppendSignal, pollingSubscription } from "../../src/eventstore/catch-up.js";
import { type Position, pageOf, type RecordedEvent, type Subscription } from "../../src/eventstore/port.js";

/** Long enough that nothing in these tests is found by the idle poll. */
const IDLE_POLL_MS = 60_000;
/** Well past the subscription's quick re-reads (a few milliseconds each). */
const SETTLE_MS = 60;

const position = (n: number): Position => String(n).padStart(6, "0");
const event = (n: number): RecordedEvent => ({
  eventId: `event-${n}`,
  streamId: "stream",
  revision: n - 1,
  type: "Happened",
  data: {},
  metadata: { occurredAt: new Date(0).toISOString() } as RecordedEvent["metadata"],
  position: position(n),
});

/** A log in memory whose reads see only what is `visible`, counting the reads. */
class FakeLog {
  events: RecordedEvent[] = [];
  visible = Number.POSITIVE_INFINITY;
  reads = 0;
  /** Runs inside the next read, after its snapshot was taken. */
  duringNextRead: (() => void) | null = null;

  readAll = async (from: Position | null, limit: number): Promise<RecordedEvent[]> => {
    this.reads++;
    const found = this.events
      .filter((e, index) => index < this.visible && (from === null || e.position > from))
      .slice(0, limit);
    const during = this.duringNextRead;
    this.duringNextRead = null;
    during?.();
    return found;
  };
}

const settle = (ms = SETTLE_MS) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await settle(5);
  expect(condition()).toBe(true);
}

describe("the catch-up subscription", () => {
  let subscription: Subscription | null = null;
  afterEach(async () => {
    await subscription?.stop();
    subscription = null;
  });

  function follow(
    log: FakeLog,
    signal: AppendSignal,
    readIntervalMs?: number | (() => number),
  ): RecordedEvent[] {
    const handled: RecordedEvent[] = [];
    subscription = pollingSubscription(
      async (from, limit, types) => pageOf(await log.readAll(from, limit), types),
      signal,
      { from: null, handle: async (b) => void handled.push(...b), readIntervalMs },
      IDLE_POLL_MS,
    );
    return handled;
  }

  it("waits out its read interval after a read, asking it anew each time, and reads at once when hurried", async () => {
    const log = new FakeLog();
    const signal = new AppendSignal();
    let interval = 10_000;
    log.events.push(event(1));
    const handled = follow(log, signal, () => interval);
    await until(() => handled.length === 1);

    log.events.push(event(2));
    signal.notify(position(2));
    await settle();
    expect(handled, "read again before its interval was out").toHaveLength(1);
    subscription?.hurry();
    await until(() => handled.length === 2);

    interval = 0;
    log.events.push(event(3));
    signal.notify(position(3));
    await until(() => handled.length === 3);
  });

  it("does not read again for an append it has already read, however late its notice came", async () => {
    const log = new FakeLog();
    const signal = new AppendSignal();
    log.events.push(event(1));
    // The append is in the first read; its notice arrives while that read runs.
    log.duringNextRead = () => signal.notify(position(1));
    const handled = follow(log, signal);
    await until(() => handled.length === 1);
    await settle();
    expect(log.reads).toBe(1);

    log.events.push(event(2));
    signal.notify(position(2));
    await until(() => handled.length === 2);
    await settle();
    expect(log.reads).toBe(2);
  });

  it("reads again at once while an announced append is not readable yet", async () => {
    const log = new FakeLog();
    const signal = new AppendSignal();
    const handled = follow(log, signal);
    await settle();
    // Committed, but behind a transaction still open elsewhere: the first reads miss it.
    log.events.push(event(1));
    log.visible = 0;
    signal.notify(position(1));
    await until(() => log.reads >= 3);
    log.visible = 1;
    await until(() => handled.length === 1);
    expect(handled.map((e) => e.eventId)).toEqual(["event-1"]);
  });

  it("reads on a notice without a position (another process's append)", async () => {
    const log = new FakeLog();
    const signal = new AppendSignal();
    const handled = follow(log, signal);
    await settle();
    const readsBefore = log.reads;
    log.events.push(event(1));
    signal.notify();
    await until(() => handled.length === 1);
    expect(log.reads).toBeGreaterThan(readsBefore);
  });
});
