import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { encryptedSize } from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CuttingProxy } from "../../packages/sdk/test/cutting-proxy.js";
import { sendStatePath } from "../../src/client/send-state.js";
import { startS3Store } from "../support/s3-server.js";
import { freePort } from "../support/server-process.js";
import {
  blobsOfSize,
  captured,
  clientAccount,
  eventually,
  handoff,
  type ListeningServer,
  startHandoff,
  startListeningServer,
  tempDir,
} from "./support.js";

const MiB = 1024 * 1024;

/** The server's blob stores: its data folder, or S3 (s3rver) with the tus bytes in multipart uploads. */
const STORES = {
  filesystem: async () => ({ env: {}, stop: async () => {} }),
  "S3 (s3rver)": startS3Store,
} as const;

for (const [storeName, startStore] of Object.entries(STORES)) {
  describe(`handoff send --resume after the send was killed (decisions 7.2), blobs on ${storeName}`, () => {
    let server: ListeningServer;
    let store: { env: Record<string, string>; stop(): Promise<void> };
    let proxy: CuttingProxy;
    let env: Record<string, string>;
    const work = tempDir("handoff-resume-");
    const alice = join(work.path, "alice.json");
    const bob = join(work.path, "bob.json");

    beforeAll(async () => {
      const proxyPort = await freePort();
      store = await startStore();
      // The CLI and the resumable_url links both go through the proxy, which can slow uploads down.
      server = await startListeningServer(
        { PUBLIC_BASE_URL: `http://127.0.0.1:${proxyPort}`, ...store.env },
        { postgres: true },
      );
      proxy = new CuttingProxy(() => Number(new URL(server.baseUrl).port));
      await proxy.start(proxyPort);
      ({ env } = await clientAccount(server));
      env = { ...env, HANDOFF_URL: proxy.url };
      for (const [agent, path] of [
        ["alice", alice],
        ["bob", bob],
      ] as const) {
        const made = await handoff(["identity", "new", "--agent", agent, "--out", path], env);
        expect(made.status, made.stderr).toBe(0);
      }
    });
    afterAll(async () => {
      proxy?.close();
      await server?.close();
      await store?.stop();
      work.remove();
    });

    /** `handoff send --resume ID --identity alice.json`. */
    const resume = (transferId: string) =>
      handoff(["send", "--resume", transferId, "--identity", alice], env);

    it("keeps a 0600 state file while it sends, finishes from the server's offset after SIGKILL, and removes the state", async () => {
      const data = randomBytes(24 * MiB + 3);
      const path = join(work.path, "big.bin");
      writeFileSync(path, data);
      proxy.patches.length = 0;
      proxy.bytesPerSecond = 4 * MiB;
      const statesAtFirstPatch: string[][] = [];
      proxy.onPatch = () => statesAtFirstPatch.push(stateFiles(`${alice}.sends`));
      const child = startHandoff(["send", "--identity", alice, "--to", "bob", path], env);
      const output = captured(child);
      await eventually(
        () => (proxy.patches[0]?.forwarded ?? 0) >= 6 * MiB,
        "6 MiB of the upload through the proxy",
        () => `stderr: ${output.stderr}`,
      );

      // Written before the first byte: the transfer, each file's path and resumable_url, and K.
      proxy.onPatch = () => {};
      const [transferId] = stateFiles(`${alice}.sends`);
      expect(transferId).toMatch(/^tr_/);
      expect(statesAtFirstPatch[0]).toEqual([transferId]);
      const statePath = sendStatePath(alice, transferId as string);
      expect(statSync(statePath).mode & 0o777).toBe(0o600);
      const stateText = readFileSync(statePath, "utf8");
      const state = JSON.parse(stateText);
      expect(state).toMatchObject({
        transfer_id: transferId,
        files: [{ path, name: "big.bin", size: data.length }],
      });
      expect(state.files[0].resumable_url).toMatch(new RegExp(`^${proxy.url}/v1/uploads/`));
      expect(Buffer.from(state.content_key, "base64")).toHaveLength(32);

      child.kill("SIGKILL");
      await once(child, "close");
      proxy.bytesPerSecond = Number.POSITIVE_INFINITY;
      const killedAt = proxy.patches.length;

      // Links that expired: a clear refusal, and the state that can never be used again goes.
      writeFileSync(statePath, JSON.stringify({ ...state, expires_at: "2000-01-01T00:00:00.000Z" }), {
        mode: 0o600,
      });
      const expired = await resume(transferId as string);
      expect(expired.status).toBe(1);
      expect(expired.stderr).toMatch(
        /^the upload links of transfer tr_\S+ expired .* send them again \(TRANSFER_EXPIRED\)\n$/,
      );
      expect(existsSync(statePath)).toBe(false);
      expect(proxy.patches).toHaveLength(killedAt);

      keep(statePath, stateText);
      const resumed = await resume(transferId as string);
      expect(resumed.stderr).toBe("");
      expect(resumed.status).toBe(0);
      expect(JSON.parse(resumed.stdout)).toMatchObject({ id: transferId, status: "active" });
      // On from the server's offset, not from zero; every byte of the file arrived once at most twice.
      const resumedPatch = proxy.patches[killedAt];
      expect(resumedPatch?.offset).toBeGreaterThan(0);
      expect((resumedPatch?.offset ?? 0) + (resumedPatch?.forwarded ?? 0)).toBe(encryptedSize(data.length));
      expect(existsSync(statePath)).toBe(false);
      expect(existsSync(`${alice}.sends`)).toBe(false);

      const out = join(work.path, "received");
      const received = await handoff(["receive", transferId as string, "--identity", bob, "--out", out], env);
      expect(received.status, received.stderr).toBe(0);
      expect(readFileSync(join(out, "big.bin")).equals(data)).toBe(true);
      // Stored where the title says: in the data folder, or in S3 and not there.
      const onDisk = existsSync(server.blobsDir)
        ? blobsOfSize(server.blobsDir, encryptedSize(data.length))
        : [];
      expect(onDisk).toHaveLength(storeName === "filesystem" ? 1 : 0);

      // The same state again: the transfer is confirmed, nothing is sent, and the state goes.
      keep(statePath, stateText);
      const again = await resume(transferId as string);
      expect(again.status).toBe(1);
      expect(again.stderr).toBe(
        `transfer ${transferId} was already confirmed (status active): nothing is left to send (ALREADY_CONFIRMED)\n`,
      );
      expect(existsSync(statePath)).toBe(false);
    });

    it("a send that gives up names the command that finishes it, and that command does", async () => {
      const data = randomBytes(8 * MiB + 1);
      const path = join(work.path, "stuck.bin");
      writeFileSync(path, data);
      proxy.cuts = Array.from({ length: 5 }, () => 0);
      const failed = await handoff(["send", "--identity", alice, "--to", "bob", "--plain", path], env);
      proxy.cuts = [];
      expect(failed.status).toBe(1);
      const [transferId] = stateFiles(`${alice}.sends`);
      expect(failed.stderr.split("\n").at(-2)).toMatch(
        new RegExp(
          `no progress in 5 attempts in a row .*; to finish the send: handoff send --resume ${transferId} --identity ${alice} \\(NETWORK_ERROR\\)$`,
        ),
      );

      const resumed = await resume(transferId as string);
      expect(resumed.status, resumed.stderr).toBe(0);
      const out = join(work.path, "received-stuck");
      const received = await handoff(["receive", transferId as string, "--identity", bob, "--out", out], env);
      expect(received.status, received.stderr).toBe(0);
      expect(readFileSync(join(out, "stuck.bin")).equals(data)).toBe(true);
      expect(existsSync(`${alice}.sends`)).toBe(false);
    });

    it("a send that completes removes its state; --resume without one says so in one line", async () => {
      const path = join(work.path, "whole.bin");
      writeFileSync(path, randomBytes(9 * MiB));
      const sent = await handoff(["send", "--identity", alice, "--to", "bob", path], env);
      expect(sent.status, sent.stderr).toBe(0);
      expect(existsSync(`${alice}.sends`)).toBe(false);

      const missing = await resume("tr_nothingtoresume");
      expect(missing.status).toBe(1);
      expect(missing.stderr).toBe(
        `no interrupted send of tr_nothingtoresume for ${alice} (${alice}.sends/tr_nothingtoresume.json does not exist): it completed, or it was sent with another identity file (NO_SEND_STATE)\n`,
      );
      const climbing = await resume("../alice");
      expect(climbing.status).toBe(1);
      expect(climbing.stderr).toMatch(/^--resume needs a transfer id \(tr_…\), got "\.\.\/alice"/);
      const withPaths = await handoff(["send", "--resume", "tr_x", "--identity", alice, path], env);
      expect(withPaths.status).toBe(1);
      expect(withPaths.stderr).toMatch(/^--resume takes only --identity/);
    });
  });
}

/** Puts a state file (back) in place, as `handoff send` would have left it. */
function keep(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, text, { mode: 0o600 });
}

/** The transfers with a state file in `dir`. */
function stateFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".json"))
    .map((name) => name.slice(0, -".json".length));
}
