import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { freshPostgres, postgresServer, tempDir } from "../support/databases.js";
import { startS3Store } from "../support/s3-server.js";
import { callJson as call, ServerProcess } from "../support/server-process.js";
import { openPatch } from "../support/tus-client.js";

const MiB = 1024 * 1024;
const TUS = { "tus-resumable": "1.0.0" };

/**
 * The upload's offset as the server answers HEAD (which also stops a PATCH in flight). Asked of the
 * restarted server, it answers at once: the killed process's lease names a process of this host
 * that no longer runs, so it is taken over rather than waited out (no 423 for its 8 s).
 */
async function offsetOf(url: string): Promise<number> {
  const head = await fetch(url, { method: "HEAD", headers: TUS });
  expect(head.status).toBe(200);
  return Number(head.headers.get("upload-offset"));
}

describe.each(["filesystem", "s3"] as const)(
  "a tus upload across kill -9 of the server, %s store",
  (store) => {
    const cleanups: (() => Promise<void> | void)[] = [];
    afterAll(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup();
    });

    it("keeps what it committed mid-PATCH and completes byte-exact after the restart", async () => {
      const dir = tempDir();
      cleanups.push(() => dir.remove());
      const database = postgresServer ? await freshPostgres(postgresServer) : null;
      if (database) cleanups.push(() => database.drop());
      const s3 = store === "s3" ? await startS3Store() : null;
      if (s3) cleanups.push(() => s3.stop());
      const env = {
        DATA_DIR: dir.path,
        ADMIN_TOKEN,
        ...(database ? { DATABASE_URL: database.url } : {}),
        ...(s3?.env ?? {}),
      };
      let server = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
      cleanups.push(() => server.kill());

      const created = await call(server.baseUrl, "POST", "/v1/admin/accounts", ADMIN_TOKEN, {
        email: `crash-${randomBytes(4).toString("hex")}@example.com`,
        plan: "builder",
      });
      const apiKey = created.api_key.api_key as string;
      for (const agent of ["alice", "bob"])
        await call(server.baseUrl, "POST", "/v1/agents/register", apiKey, {
          agent_id: agent,
          public_key: randomPublicKey(),
        });
      const data = randomBytes(48 * MiB);
      const presigned = await call(server.baseUrl, "POST", "/v1/transfers/presigned", apiKey, {
        mode: "agent-to-agent",
        sender: "alice",
        recipient: "bob",
        files: [{ name: "big.bin", size: data.length }],
      });
      const item = presigned.upload_urls[0] as { file_id: string; resumable_url: string };
      const path = new URL(item.resumable_url).pathname;

      // 40 of 48 MiB go out; once the server has committed some of them, it is killed mid-request.
      const patch = openPatch(`${server.baseUrl}${path}`, 0, data, 40 * MiB);
      // Watched without asking the server (a HEAD would stop the PATCH): the filesystem store's
      // state file; on S3, a second part means the first (at least 5 MiB) is in the upload's state.
      const stateFile = join(
        dir.path,
        "blobs",
        ".resumable",
        "transfers",
        presigned.id,
        item.file_id,
        "state.json",
      );
      const committedSoFar = async () =>
        s3
          ? Math.max(0, s3.server.partsUploaded() - 1) * 5 * MiB
          : await readFile(stateFile, "utf8")
              .then((text) => JSON.parse(text).offset as number)
              .catch(() => 0);
      let committed = 0;
      const deadline = Date.now() + 60_000;
      while (committed === 0 && Date.now() < deadline) {
        committed = await committedSoFar();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(committed).toBeGreaterThan(0);
      await server.kill("SIGKILL");
      await patch.ended;

      server = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
      const offset = await offsetOf(`${server.baseUrl}${path}`);
      expect(offset).toBeGreaterThanOrEqual(committed);
      expect(offset).toBeLessThanOrEqual(40 * MiB);

      const rest = await fetch(`${server.baseUrl}${path}`, {
        method: "PATCH",
        headers: {
          ...TUS,
          "content-type": "application/offset+octet-stream",
          "upload-offset": String(offset),
        },
        body: data.subarray(offset),
      });
      expect(rest.status).toBe(204);
      await call(server.baseUrl, "POST", `/v1/transfers/${presigned.id}/confirm`, apiKey);
      const download = await fetch(`${server.baseUrl}/v1/transfers/${presigned.id}/download`, {
        headers: { authorization: `Bearer ${apiKey}`, "x-service-agent": "bob" },
      });
      const link = ((await download.json()) as { files: { download_url: string }[] }).files[0]
        ?.download_url as string;
      // S3 serves its own signed link; the service's links name its public address, not the test port.
      const fileUrl = s3 ? link : `${server.baseUrl}${new URL(link).pathname}`;
      const got = Buffer.from(await (await fetch(fileUrl)).arrayBuffer());
      const hash = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
      expect({ length: got.length, sha256: hash(got) }).toEqual({ length: data.length, sha256: hash(data) });
    }, 300_000);
  },
);
