import { describe, expect, it } from "vitest";
import { HotRows } from "../../src/read-models/hot-rows.js";

/** A look-up that answers when told to, counting how often it was asked. */
function slowLook(row: string) {
  const answers: (() => void)[] = [];
  const look = {
    asked: 0,
    fn: () => {
      look.asked++;
      return new Promise<string | undefined>((resolve) => answers.push(() => resolve(row)));
    },
    answerAll: () => {
      for (const answer of answers.splice(0)) answer();
    },
  };
  return look;
}

describe("HotRows", () => {
  it("reads a row once for everyone who asks while it is being read, and remembers it", async () => {
    const rows = new HotRows<string>();
    rows.following(true);
    const look = slowLook("key row");
    const asking = Array.from({ length: 32 }, () => rows.get("digest", look.fn));
    look.answerAll();
    expect(await Promise.all(asking)).toEqual(Array(32).fill("key row"));
    expect(look.asked).toBe(1);
    expect(await rows.get("digest", look.fn)).toBe("key row");
    expect(look.asked).toBe(1);
  });

  it("reads again for whoever asks after a drop, and remembers nothing read across it", async () => {
    const rows = new HotRows<string>();
    rows.following(true);
    const before = slowLook("old row");
    const first = rows.get("digest", before.fn);
    rows.drop();
    const after = slowLook("new row");
    const second = rows.get("digest", after.fn);
    before.answerAll();
    after.answerAll();
    expect(await first).toBe("old row");
    expect(await second).toBe("new row");
    expect(after.asked).toBe(1);
    expect(rows.held("digest")).toBe("new row");
  });

  it("shares a failed read with those who waited for it, and reads again afterwards", async () => {
    const rows = new HotRows<string>();
    rows.following(true);
    let asked = 0;
    const failing = () => {
      asked++;
      return Promise.reject(new Error("database away"));
    };
    const results = await Promise.allSettled([rows.get("digest", failing), rows.get("digest", failing)]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(asked).toBe(1);
    await expect(rows.get("digest", failing)).rejects.toThrow("database away");
    expect(asked).toBe(2);
  });
});
