import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { freshPostgres, postgresServer, tempDir } from "../support/databases.js";
import { ServerProcess } from "../support/server-process.js";

const MiB = 1024 * 1024;
const TUS = { "tus-resumable": "1.0.0" };

async function call(base: string, method: string, path: string, key: string, body?: unknown) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return JSON.parse(text);
}

/** Starts a PATCH of `total` bytes and writes the first `sent` of them; the request stays open. */
function openPatch(url: string, offset: number, data: Buffer, sent: number) {
  const req = request(url, {
    method: "PATCH",
    headers: {
      ...TUS,
      "content-type": "application/offset+octet-stream",
      "upload-offset": String(offset),
      "content-length": String(data.length - offset),
    },
  });
  const ended = new Promise<void>((resolve) => {
    req.on("error", () => resolve());
    req.on("response", () => resolve());
  });
  req.write(data.subarray(offset, offset + sent));
  return { ended };
}

describe("a tus upload across kill -9 of the server", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("keeps what it committed mid-PATCH and completes byte-exact after the restart", async () => {
    const dir = tempDir();
    cleanups.push(() => dir.remove());
    const database = postgresServer ? await freshPostgres(postgresServer) : null;
    if (database) cleanups.push(() => database.drop());
    const env = { DATA_DIR: dir.path, ADMIN_TOKEN, ...(database ? { DATABASE_URL: database.url } : {}) };
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
    const state = join(
      dir.path,
      "blobs",
      ".resumable",
      "transfers",
      presigned.id,
      item.file_id,
      "state.json",
    );

    // 40 of 48 MiB go out; once the server has committed some of them, it is killed mid-request.
    const patch = openPatch(`${server.baseUrl}${path}`, 0, data, 40 * MiB);
    let committed = 0;
    const deadline = Date.now() + 60_000;
    while (committed === 0 && Date.now() < deadline) {
      committed = await readFile(state, "utf8")
        .then((text) => JSON.parse(text).offset as number)
        .catch(() => 0);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(committed).toBeGreaterThan(0);
    await server.kill("SIGKILL");
    await patch.ended;

    server = await ServerProcess.start(env, { readyTimeoutMs: 120_000 });
    const head = await fetch(`${server.baseUrl}${path}`, { method: "HEAD", headers: TUS });
    expect(head.status).toBe(200);
    const offset = Number(head.headers.get("upload-offset"));
    expect(offset).toBeGreaterThanOrEqual(committed);
    expect(offset).toBeLessThanOrEqual(40 * MiB);

    const rest = await fetch(`${server.baseUrl}${path}`, {
      method: "PATCH",
      headers: { ...TUS, "content-type": "application/offset+octet-stream", "upload-offset": String(offset) },
      body: data.subarray(offset),
    });
    expect(rest.status).toBe(204);
    await call(server.baseUrl, "POST", `/v1/transfers/${presigned.id}/confirm`, apiKey);
    const download = await fetch(`${server.baseUrl}/v1/transfers/${presigned.id}/download`, {
      headers: { authorization: `Bearer ${apiKey}`, "x-service-agent": "bob" },
    });
    const link = ((await download.json()) as { files: { download_url: string }[] }).files[0]
      ?.download_url as string;
    const got = Buffer.from(await (await fetch(`${server.baseUrl}${new URL(link).pathname}`)).arrayBuffer());
    const hash = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
    expect({ length: got.length, sha256: hash(got) }).toEqual({ length: data.length, sha256: hash(data) });
  }, 300_000);
});
