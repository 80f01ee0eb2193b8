import { createHash, randomBytes } from "node:crypto";
import { closeSync, createReadStream, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { HandoffClient } from "@handoff/sdk";
import { beforeAll, describe, expect, it } from "vitest";
import { aliceAndBob } from "./support.js";

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const CHUNK = 64 * 1024;
/**
 * How far this process's RSS may grow while 64 MiB stream through client and server (one
 * process), once warm: half the file, so holding it anywhere fails the test (a few MB are seen).
 */
const RSS_ALLOWANCE = 32 * MiB;

/** Samples RSS every 25 ms from now on; `stop()` gives the largest growth seen. */
function watchRss() {
  const baseline = process.memoryUsage().rss;
  let peak = baseline;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 25);
  return {
    stop(): number {
      clearInterval(timer);
      return Math.max(peak, process.memoryUsage().rss) - baseline;
    },
  };
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk);
  return hash.digest("hex");
}

describe("a 64 MiB file streams with flat memory", () => {
  const w = aliceAndBob();
  const source = join(w.dir, "large.bin");
  let digest = "";

  beforeAll(async () => {
    const fd = openSync(source, "w");
    const hash = createHash("sha256");
    // Small chunks, so that making the file leaves little garbage to blur the measurements.
    for (let written = 0; written < SIZE; written += CHUNK) {
      const chunk = randomBytes(CHUNK);
      hash.update(chunk);
      writeSync(fd, chunk);
    }
    closeSync(fd);
    digest = hash.digest("hex");
    // The first transfer sets up WebCrypto's and the HTTP stack's pools (tens of MB, once):
    // warm both paths with 16 MiB so that what is measured is the streaming itself.
    const small = join(w.dir, "warm-up.bin");
    writeFileSync(small, randomBytes(16 * MiB));
    for (const presignedThreshold of [0, Number.MAX_SAFE_INTEGER]) {
      const client = new HandoffClient({
        baseUrl: w.server.baseUrl,
        apiKey: w.apiKey,
        identity: w.alice.identity,
        presignedThreshold,
      });
      const transfer = await client.send({ to: "bob", paths: [small] });
      await w.bob.client.receive(transfer.id, { outDir: join(w.dir, `warm-${presignedThreshold}`) });
    }
  });

  it.each([
    ["presigned", 0],
    ["multipart", Number.MAX_SAFE_INTEGER],
  ])(
    "through the %s path, send then receive",
    async (path, threshold) => {
      const sender = new HandoffClient({
        baseUrl: w.server.baseUrl,
        apiKey: w.apiKey,
        identity: w.alice.identity,
        presignedThreshold: threshold,
      });
      const sending = watchRss();
      const started = Date.now();
      const transfer = await sender.send({ to: "bob", paths: [source] });
      const sendGrowth = sending.stop();
      const sendMs = Date.now() - started;

      const receiving = watchRss();
      const outDir = join(w.dir, `out-${path}`);
      const received = await w.bob.client.receive(transfer.id, { outDir });
      const receiveGrowth = receiving.stop();
      console.info(
        `${path} 64 MiB: send ${sendMs} ms, RSS +${(sendGrowth / MiB).toFixed(1)} MiB; ` +
          `receive RSS +${(receiveGrowth / MiB).toFixed(1)} MiB`,
      );
      expect(received.files[0]?.size).toBe(SIZE);
      expect(await sha256Of(received.files[0]?.path as string)).toBe(digest);
      expect(sendGrowth, "the send held the file in memory").toBeLessThan(RSS_ALLOWANCE);
      expect(receiveGrowth, "the receive held the file in memory").toBeLessThan(RSS_ALLOWANCE);
    },
    180_000,
  );
});
