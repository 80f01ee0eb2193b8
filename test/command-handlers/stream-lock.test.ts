import { describe, expect, it } from "vitest";
import { type Outcome, StreamLock } from "../../src/command-handlers/stream-lock.js";

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

describe("StreamLock.together", () => {
  it("decides what queued during a turn in the next turn, together, in arrival order", async () => {
    const lock = new StreamLock();
    const turns: number[][] = [];
    const decideAll = async (items: number[]): Promise<Outcome<string>[]> => {
      turns.push(items);
      await tick();
      return items.map((n) => ({ ok: true, value: `done ${n}` }));
    };
    const answers = await Promise.all([1, 2, 3, 4].map((n) => lock.together("s", n, decideAll)));
    expect(answers).toEqual(["done 1", "done 2", "done 3", "done 4"]);
    // Calls made before the turn begins all join it.
    expect(turns).toEqual([[1, 2, 3, 4]]);

    turns.length = 0;
    const first = lock.together("s", 5, decideAll);
    await tick();
    const later = [6, 7].map((n) => lock.together("s", n, decideAll));
    await Promise.all([first, ...later]);
    expect(turns).toEqual([[5], [6, 7]]);
  });

  it("refuses one item alone, and all of a turn that fails as a whole", async () => {
    const lock = new StreamLock();
    const refuseOdd = async (items: number[]): Promise<Outcome<number>[]> =>
      items.map((n) => (n % 2 ? { ok: false, error: new Error(`odd ${n}`) } : { ok: true, value: n }));
    const settled = await Promise.allSettled([1, 2, 3].map((n) => lock.together("s", n, refuseOdd)));
    expect(settled.map((s) => s.status)).toEqual(["rejected", "fulfilled", "rejected"]);

    const broken = async (): Promise<Outcome<number>[]> => {
      throw new Error("the append failed");
    };
    const all = await Promise.allSettled([1, 2].map((n) => lock.together("t", n, broken)));
    expect(all.every((s) => s.status === "rejected")).toBe(true);
    // The stream is free again afterwards.
    await expect(lock.together("t", 8, refuseOdd)).resolves.toBe(8);
  });

  it("takes turns with run() on the same stream, and not with other streams", async () => {
    const lock = new StreamLock();
    const order: string[] = [];
    const slow = lock.run("s", async () => {
      await tick();
      order.push("run");
    });
    const joined = lock.together("s", 1, async (items) => {
      order.push("together");
      return items.map((n) => ({ ok: true, value: n }));
    });
    const other = lock.together("other", 2, async (items) => {
      order.push("other stream");
      return items.map((n) => ({ ok: true, value: n }));
    });
    await Promise.all([slow, joined, other]);
    expect(order).toEqual(["other stream", "run", "together"]);
  });
});
