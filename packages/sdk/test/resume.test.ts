import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { encryptedSize, HandoffClient, MAX_STALLED_ATTEMPTS, RESUMABLE_FROM } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { postgresServer } from "../../../test/support/databases.js";
import { startS3Store, type TestS3Store } from "../../../test/support/s3-server.js";
import { freePort } from "../../../test/support/server-process.js";
import { CuttingProxy, type SeenPatch } from "./cutting-proxy.js";
import { type LiveServer, newAgent, startLiveServer, type TestAgent, tempDir } from "./support.js";

const MiB = 1024 * 1024;

for (const store of ["filesystem", "S3 (s3rver)"] as const) {
  describe(`a send from ${RESUMABLE_FROM / MiB} MiB resumes a dropped upload (decisions 7.2), ${store} store`, () => {
    let s3: TestS3Store | null = null;
    let server: LiveServer;
    let proxy: CuttingProxy;
    let apiKey: string;
    let alice: TestAgent;
    let bob: TestAgent;
    const dir = tempDir();

    beforeAll(async () => {
      if (store !== "filesystem") s3 = await startS3Store();
      const proxyPort = await freePort();
      // The resumable_url the server hands out names the proxy, so the uploads go through it.
      server = await startLiveServer(
        {
          PUBLIC_BASE_URL: `http://127.0.0.1:${proxyPort}`,
          ...s3?.env,
        },
        postgresServer ? "postgres" : "pglite",
      );
      proxy = new CuttingProxy(() => Number(new URL(server.baseUrl).port));
      await proxy.start(proxyPort);
      ({ apiKey } = await server.t.newAccount("builder"));
      alice = await newAgent(server, apiKey, "alice");
      bob = await newAgent(server, apiKey, "bob");
    });
    afterAll(async () => {
      proxy?.close();
      await server?.close();
      await s3?.stop();
      dir.cleanup();
    });

    const viaProxy = () => new HandoffClient({ baseUrl: proxy.url, apiKey, identity: alice.identity });

    function bigFile(name: string, size: number): { path: string; data: Buffer } {
      const data = randomBytes(size);
      const path = join(dir.path, name);
      writeFileSync(path, data);
      return { path, data };
    }

    async function received(transferId: string): Promise<Buffer> {
      const result = await bob.client.receive(transferId, { outDir: join(dir.path, `out-${transferId}`) });
      return readFileSync(result.files[0]?.path as string);
    }

    /** What the proxy's PATCHes put on the wire beyond the file's own bytes: what was sent twice. */
    const resent = (wireSize: number) =>
      proxy.patches.reduce((sum, patch) => sum + patch.forwarded, 0) - wireSize;

    it("a plain file cut six times mid-PATCH goes on from the server's offset each time and arrives byte-exact", async () => {
      const { path, data } = bigFile("plain.bin", 12 * MiB + 3);
      proxy.patches.length = 0;
      // Six cuts in a row, more than MAX_STALLED_ATTEMPTS: each one made progress, so none counts.
      proxy.cuts = Array.from({ length: 6 }, (_, index) => MiB + index * 4099);
      const transfer = await viaProxy().send({ to: "bob", paths: [path], plain: true });
      expect(transfer.status).toBe("active");

      expect(proxy.patches).toHaveLength(7);
      expect(proxy.patches.slice(0, 6).every((patch) => patch.cut)).toBe(true);
      // Every PATCH after a cut starts where the server's bytes end (bytes still in flight at the
      // cut may be lost), never back at zero.
      expect(proxy.patches[0]?.offset).toBe(0);
      for (const [index, patch] of proxy.patches.entries()) {
        const before = proxy.patches[index - 1];
        if (!before) continue;
        expect(patch.offset).toBeGreaterThanOrEqual(before.offset);
        expect(patch.offset).toBeLessThanOrEqual(before.offset + before.forwarded);
      }
      expect(proxy.patches.at(-1)?.offset).toBeGreaterThan(0);
      const last = proxy.patches.at(-1);
      expect((last?.offset ?? 0) + (last?.forwarded ?? 0)).toBe(data.length);
      // At most what the six cut requests carried went twice.
      expect(resent(data.length)).toBeLessThan(6.5 * MiB);
      expect((await received(transfer.id)).equals(data)).toBe(true);
    });

    it("an encrypted file is sealed again from the record holding the offset and decrypts byte-exact", async () => {
      const { path, data } = bigFile("secret.bin", 12 * MiB + 5);
      proxy.patches.length = 0;
      // Cuts inside records (and inside a tag), not on their boundaries.
      proxy.cuts = [3 * MiB + 7, 5 * MiB + 65_545];
      const transfer = await viaProxy().send({ to: "bob", paths: [path] });
      expect(transfer.is_encrypted).toBe(true);

      expect(proxy.patches.map((patch) => patch.cut)).toEqual([true, true, false]);
      const [first, second, third] = proxy.patches as [SeenPatch, SeenPatch, SeenPatch];
      expect(second.offset).toBeLessThanOrEqual(first.forwarded);
      expect(third.offset).toBeGreaterThanOrEqual(second.offset);
      expect(third.offset).toBeGreaterThan(0);
      expect(third.offset + third.forwarded).toBe(encryptedSize(data.length));
      expect((await received(transfer.id)).equals(data)).toBe(true);
    });

    it(`gives up after ${MAX_STALLED_ATTEMPTS} attempts in a row that move nothing, naming what the server holds`, async () => {
      const { path } = bigFile("stuck.bin", RESUMABLE_FROM);
      proxy.patches.length = 0;
      proxy.cuts = Array.from({ length: 10 }, () => 0);
      const error = await viaProxy()
        .send({ to: "bob", paths: [path], plain: true })
        .catch((e: unknown) => e);
      proxy.cuts = [];
      expect(error).toMatchObject({ code: "NETWORK_ERROR" });
      expect((error as Error).message).toMatch(/no progress in 5 attempts in a row.*0 of 8388608 bytes/);
      expect(proxy.patches).toHaveLength(MAX_STALLED_ATTEMPTS);
    });
  });
}
