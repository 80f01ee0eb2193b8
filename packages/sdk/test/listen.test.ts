import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { ReceiveResult } from "@handoff/sdk";
import { describe, expect, it } from "vitest";
import { aliceAndBob, entries, sendByHand } from "./support.js";

/** Resolves once `check` holds, polling every 50 ms, or fails after `ms`. */
async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("listen", () => {
  const w = aliceAndBob();

  it("receives transfers sent while it runs, reports a broken one once and skips it, and stops on abort", async () => {
    const outDir = join(w.dir, "inbox");
    const received: ReceiveResult[] = [];
    const failed: { id: string; error: Error }[] = [];
    const controller = new AbortController();
    const running = w.bob.client.listen({
      outDir,
      signal: controller.signal,
      onReceived: (result) => received.push(result),
      onFailed: (id, error) => failed.push({ id, error }),
    });
    // Let the first long-poll start before anything is sent.
    await new Promise((resolve) => setTimeout(resolve, 300));

    const first = join(w.dir, "first.txt");
    writeFileSync(first, "first");
    const one = await w.alice.client.send({ to: "bob", paths: [first] });
    const broken = await sendByHand(w.server, w.apiKey, {
      from: w.alice,
      to: w.bob,
      files: [
        {
          name: "broken.bin",
          plain: new Uint8Array(10),
          alter: (b) => b.map((x, i) => (i === 30 ? x ^ 1 : x)),
        },
      ],
    });
    const second = join(w.dir, "second.txt");
    writeFileSync(second, "second");
    const two = await w.alice.client.send({ to: "bob", paths: [second] });

    await until(() => received.length === 2 && failed.length === 1);
    expect(received.map((r) => r.transfer_id)).toEqual([one.id, two.id]);
    expect(failed.map((f) => f.id)).toEqual([broken]);
    expect(failed[0]?.error).toHaveProperty("code");

    // A later arrival wakes the loop again; the broken transfer is not tried a second time.
    const third = join(w.dir, "third.txt");
    writeFileSync(third, "third");
    const three = await w.alice.client.send({ to: "bob", paths: [third] });
    await until(() => received.length === 3);
    expect(received[2]?.transfer_id).toBe(three.id);
    expect(failed).toHaveLength(1);
    expect(entries(outDir)).toEqual(["first.txt", "second.txt", "third.txt"]);

    const stopping = Date.now();
    controller.abort();
    await running;
    expect(Date.now() - stopping).toBeLessThan(2000);
  });

  it("does not receive again what was already downloaded when it starts", async () => {
    const path = join(w.dir, "old.txt");
    writeFileSync(path, "old");
    const old = await w.alice.client.send({ to: "bob", paths: [path] });
    await w.bob.client.receive(old.id, { outDir: join(w.dir, "manual") });
    const received: string[] = [];
    const controller = new AbortController();
    const running = w.bob.client.listen({
      outDir: join(w.dir, "restart"),
      signal: controller.signal,
      onReceived: (result) => received.push(result.transfer_id),
    });
    const fresh = join(w.dir, "fresh.txt");
    writeFileSync(fresh, "fresh");
    const next = await w.alice.client.send({ to: "bob", paths: [fresh] });
    await until(() => received.includes(next.id));
    controller.abort();
    await running;
    expect(received).not.toContain(old.id);
  });
});
