import { describe, expect, it } from "vitest";
import { Batched } from "../../src/db/batched.js";

/** A look-up whose statements the test ends by hand, recording the batches it was asked. */
function lookUp() {
  const batches: number[][] = [];
  const ends: (() => void)[] = [];
  const run = (inputs: number[]) => {
    batches.push(inputs);
    return new Promise<number[]>((resolve, reject) => {
      ends.push(() =>
        inputs.includes(-1) ? reject(new Error("statement failed")) : resolve(inputs.map((n) => n * 10)),
      );
    });
  };
  return { batches, run, endNext: () => ends.shift()?.() };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe("batched look-ups", () => {
  it("runs a lone call at once, and the calls made meanwhile together in the next statement", async () => {
    const { batches, run, endNext } = lookUp();
    const batched = new Batched(run, 1);
    const first = batched.call(1);
    expect(batches).toEqual([[1]]);
    const waiting = [2, 3, 4].map((n) => batched.call(n));
    expect(batches).toEqual([[1]]);
    endNext();
    expect(await first).toBe(10);
    await tick();
    expect(batches).toEqual([[1], [2, 3, 4]]);
    endNext();
    expect(await Promise.all(waiting)).toEqual([20, 30, 40]);
  });

  it("runs as many statements at once as it is given, and batches only beyond them", async () => {
    const { batches, run, endNext } = lookUp();
    const batched = new Batched(run, 2);
    const answers = [1, 2, 3, 4].map((n) => batched.call(n));
    expect(batches).toEqual([[1], [2]]);
    endNext();
    await tick();
    expect(batches).toEqual([[1], [2], [3, 4]]);
    endNext();
    endNext();
    expect(await Promise.all(answers)).toEqual([10, 20, 30, 40]);
  });

  it("sends calls queued together in one statement, even when nothing else runs", async () => {
    const { batches, run, endNext } = lookUp();
    const batched = new Batched(run, 1);
    const pair = batched.callAll([7, 8]);
    expect(batches).toEqual([[7, 8]]);
    endNext();
    expect(await pair).toEqual([70, 80]);
  });

  it("fails each call of a failed statement, and goes on with the next", async () => {
    const { run, endNext } = lookUp();
    const batched = new Batched(run, 1);
    const lone = batched.call(1);
    const failing = [batched.call(2), batched.call(-1)];
    endNext();
    await lone;
    await tick();
    endNext();
    for (const call of failing) await expect(call).rejects.toThrow("statement failed");
    const after = batched.call(5);
    endNext();
    expect(await after).toBe(50);
  });
});
