import { createHash, randomBytes } from "node:crypto";
import { closeSync, createReadStream, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { HandoffClient } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveServer, newAgent, startLiveServer, type TestAgent, tempDir } from "./support.js";

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const CHUNK = 64 * 1024;
/** How far this process's RSS may grow while 64 MiB stream through client and server (one process). */
const RSS_ALLOWANCE = 100 * MiB;

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
  let server: LiveServer;
  let apiKey: string;
  let alice: TestAgent;
  let bob: TestAgent;
  const dir = tempDir();
  const source = join(dir.path, "large.bin");
  let digest = "";

  beforeAll(async () => {
    server = await startLiveServer();
    ({ apiKey } = await server.t.newAccount("team"));
    alice = await newAgent(server, apiKey, "alice");
    bob = await newAgent(server, apiKey, "bob");
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
  });
  afterAll(async () => {
    await server?.close();
    dir.cleanup();
  });

  it.each([
    ["presigned", 0],
    ["multipart", Number.MAX_SAFE_INTEGER],
  ])(
    "through the %s path, send then receive",
    async (path, threshold) => {
      const sender = new HandoffClient({
        baseUrl: server.baseUrl,
        apiKey,
        identity: alice.identity,
        presignedThreshold: threshold,
      });
      global.gc?.();
      const sending = watchRss();
      const started = Date.now();
      const transfer = await sender.send({ to: "bob", paths: [source] });
      const sendGrowth = sending.stop();
      const sendMs = Date.now() - started;

      global.gc?.();
      const receiving = watchRss();
      const outDir = join(dir.path, `out-${path}`);
      const received = await bob.client.receive(transfer.id, { outDir });
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
