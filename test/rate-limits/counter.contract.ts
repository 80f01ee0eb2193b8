import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RateLimitCounter } from "../../src/rate-limits/counter.js";

const MINUTE = 60_000;
/** A window start well away from now: windows follow the caller's clock, not the store's. */
const W = Math.floor(Date.UTC(2031, 4, 6, 12, 0) / MINUTE) * MINUTE;

/** A bucket no other test or run uses, so a shared Redis needs no clean-up between runs. */
const bucket = (label: string) => `contract-${label}-${randomUUID()}`;

const sequential = async (n: number, hit: () => Promise<number>): Promise<number[]> => {
  const counts: number[] = [];
  for (let i = 0; i < n; i++) counts.push(await hit());
  return counts;
};

const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);

/** The rate-limit counter contract: every adapter must pass every case. */
export function counterContract(
  title: string,
  open: (() => Promise<RateLimitCounter>) | null,
  skipReason = "",
) {
  describe.skipIf(open === null)(skipReason ? `${title} (skipped: ${skipReason})` : title, () => {
    let counter: RateLimitCounter;
    beforeAll(async () => {
      counter = await (open as () => Promise<RateLimitCounter>)();
    });
    afterAll(async () => counter?.close());

    it("counts hits in a window from 1, one more per hit", async () => {
      const b = bucket("count");
      expect(await sequential(5, () => counter.hit(b, W, MINUTE))).toEqual([1, 2, 3, 4, 5]);
    });

    it("reads a count without recording a hit: 0 before any, then what the hits made", async () => {
      const b = bucket("peek");
      expect(await counter.count(b, W, MINUTE)).toBe(0);
      await counter.hit(b, W, MINUTE);
      await counter.hit(b, W, MINUTE);
      expect(await counter.count(b, W, MINUTE)).toBe(2);
      expect(await counter.count(b, W, MINUTE)).toBe(2);
      expect(await counter.count(b, W + MINUTE, MINUTE)).toBe(0);
      expect(await counter.hit(b, W, MINUTE)).toBe(3);
    });

    it("counts each bucket on its own", async () => {
      const a = bucket("a");
      const b = bucket("b");
      expect(await counter.hit(a, W, MINUTE)).toBe(1);
      expect(await counter.hit(a, W, MINUTE)).toBe(2);
      expect(await counter.hit(b, W, MINUTE)).toBe(1);
      expect(await counter.hit(a, W, MINUTE)).toBe(3);
      expect(await counter.hit(b, W, MINUTE)).toBe(2);
    });

    it("counts each window on its own, also when a late hit lands in the previous window", async () => {
      const b = bucket("windows");
      expect(await counter.hit(b, W, MINUTE)).toBe(1);
      expect(await counter.hit(b, W, MINUTE)).toBe(2);
      expect(await counter.hit(b, W + MINUTE, MINUTE)).toBe(1);
      // A request that read the clock just before the boundary still counts in its own window.
      expect(await counter.hit(b, W, MINUTE)).toBe(3);
      expect(await counter.hit(b, W + MINUTE, MINUTE)).toBe(2);
      expect(await counter.hit(b, W + 2 * MINUTE, MINUTE)).toBe(1);
    });

    it("takes the window from the caller: a window long past or far ahead counts like any other", async () => {
      const b = bucket("caller-clock");
      expect(await counter.hit(b, 0, MINUTE)).toBe(1);
      expect(await counter.hit(b, 0, MINUTE)).toBe(2);
      const ahead = W + 365 * 24 * 60 * MINUTE;
      expect(await counter.hit(b, ahead, MINUTE)).toBe(1);
    });

    it("counts 200 concurrent hits exactly: each count 1..200 once", async () => {
      const b = bucket("race");
      const counts = await Promise.all(Array.from({ length: 200 }, () => counter.hit(b, W, MINUTE)));
      expect([...counts].sort((x, y) => x - y)).toEqual(oneTo(200));
      expect(await counter.hit(b, W, MINUTE)).toBe(201);
    });

    it("counts concurrent hits on several buckets and windows exactly, each on its own", async () => {
      const buckets = [bucket("r1"), bucket("r2"), bucket("r3")];
      const windows = [W, W + MINUTE];
      const targets = buckets.flatMap((b) => windows.map((w) => ({ b, w })));
      const hits = targets.flatMap((target) => Array.from({ length: 40 }, () => target));
      // Interleave the hits so the buckets and windows race one another.
      hits.sort(() => Math.random() - 0.5);
      const results = await Promise.all(
        hits.map(async ({ b, w }) => ({ key: `${b}@${w}`, count: await counter.hit(b, w, MINUTE) })),
      );
      for (const { b, w } of targets) {
        const counts = results.filter((r) => r.key === `${b}@${w}`).map((r) => r.count);
        expect(counts.sort((x, y) => x - y)).toEqual(oneTo(40));
      }
    });
  });
}
