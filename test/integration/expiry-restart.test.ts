import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { expect } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openService } from "../../src/service.js";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { onEmbeddedAndPostgres } from "../support/process-suites.js";
import { ServerProcess } from "../support/server-process.js";

/** A running server process with what it wrote to stderr, for failure messages. */
async function startServer(env: Record<string, string>) {
  const server = await ServerProcess.start(env);
  let stderr = "";
  server.child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return { server, stderr: () => stderr };
}

/** The parts of the answers this suite reads; an error answer fills only `error`. */
interface Answer {
  error?: { code: string };
  id?: string;
  status?: string;
  api_key?: { api_key: string };
  upload_urls?: { upload_url: string; headers: Record<string, string> }[];
  transfers?: { id: string }[];
  total?: number;
}

async function request(
  baseUrl: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<{ status: number; body: Answer }> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body instanceof FormData || body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: body instanceof FormData ? body : JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? (JSON.parse(text) as Answer) : {} };
}

/** A value the answer must carry. */
function must<T>(value: T | undefined | null, what: string): T {
  if (value === undefined || value === null) throw new Error(`the answer has no ${what}`);
  return value;
}

/** Checks `condition` until it holds or `ms` have passed; true when it held. */
async function eventually(condition: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await delay(100);
  }
  return condition();
}

/**
 * Decisions 3.13 across a crash: a transfer's expiry lives in the log, not in a timer of the
 * process that accepted it. A server is SIGKILLed an hour before two transfers expire; the server
 * started again on the same data, its clock moved on two hours, expires them, answers 410, and
 * deletes their file data.
 */
async function expiryOutlivesRestart(env: Record<string, string>) {
  const blobsOf = (id: string) => join(env.DATA_DIR as string, "blobs", "transfers", id);

  const first = await startServer({ ...env, TEST_CLOCK: "1" });
  let apiKey: string;
  let active: string;
  let pending: string;
  try {
    const base = first.server.baseUrl;
    const created = await request(base, "POST", "/v1/admin/accounts", ADMIN_TOKEN, {
      email: `expiry-${randomBytes(4).toString("hex")}@example.com`,
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    apiKey = must(created.body.api_key, "api_key").api_key;
    for (const slug of ["sender", "receiver"]) {
      const agent = await request(base, "POST", "/v1/agents/register", apiKey, {
        agent_id: slug,
        public_key: randomPublicKey(),
      });
      expect(agent.status, JSON.stringify(agent.body)).toBe(201);
    }

    // An active transfer (multipart) and a pending one (presigned, uploaded, never confirmed).
    const form = new FormData();
    for (const [name, value] of Object.entries({
      mode: "agent-to-agent",
      sender: "sender",
      recipient: "receiver",
      expires_in: "1h",
      auto_delete: "false",
    })) {
      form.append(name, value);
    }
    form.append("files", new Blob(["expires in an hour"], { type: "text/plain" }), "note.txt");
    const sent = await request(base, "POST", "/v1/transfers", apiKey, form);
    expect(sent.status, JSON.stringify(sent.body)).toBe(201);
    active = must(sent.body.id, "id");

    const presigned = await request(base, "POST", "/v1/transfers/presigned", apiKey, {
      mode: "agent-to-agent",
      sender: "sender",
      recipient: "receiver",
      expires_in: "1h",
      files: [{ name: "draft.bin", size: 4, content_type: "application/octet-stream" }],
    });
    expect(presigned.status, JSON.stringify(presigned.body)).toBe(201);
    pending = must(presigned.body.id, "id");
    const upload = must(presigned.body.upload_urls?.[0], "upload URL");
    const put = await fetch(upload.upload_url, { method: "PUT", headers: upload.headers, body: "data" });
    expect(put.status, await put.text()).toBe(200);

    for (const id of [active, pending]) expect(readdirSync(blobsOf(id))).toHaveLength(1);
    const before = await request(base, "GET", `/v1/transfers/${pending}`, apiKey);
    expect(before.body.status).toBe("pending");
  } finally {
    await first.server.kill("SIGKILL");
  }

  // The test clock's offset lived in the killed process: the new one starts at the real time.
  const second = await startServer({ ...env, TEST_CLOCK: "1" });
  try {
    const base = second.server.baseUrl;
    const still = await request(base, "GET", `/v1/transfers/${active}`, apiKey);
    expect(still.body.status, "expired before its hour was up").toBe("active");

    const moved = await request(base, "POST", "/v1/admin/clock", ADMIN_TOKEN, { advance_seconds: 2 * 3600 });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);

    for (const id of [active, pending]) {
      const read = await request(base, "GET", `/v1/transfers/${id}`, apiKey);
      expect(read.status).toBe(200);
      expect(read.body.status).toBe("expired");
      const download = await request(base, "GET", `/v1/transfers/${id}/download`, apiKey);
      expect(download.status, JSON.stringify(download.body)).toBe(410);
      expect(download.body.error?.code).toBe("GONE");
    }

    const purged = await eventually(
      () => !existsSync(blobsOf(active)) && !existsSync(blobsOf(pending)),
      10_000,
    );
    expect(purged, `file data still on disk 10 s after expiry\n${second.stderr()}`).toBe(true);

    const list = await request(base, "GET", "/v1/transfers?status=expired", apiKey);
    expect(
      must(list.body.transfers, "transfers")
        .map((t) => t.id)
        .sort(),
    ).toEqual([active, pending].sort());
    const live = await request(base, "GET", "/v1/transfers?status=active", apiKey);
    expect(live.body.total).toBe(0);
  } finally {
    await second.server.kill("SIGTERM");
  }

  // The log itself records the expiry and the deletion of the data, once each.
  const service = await openService(loadConfig({ ...env, ADMIN_TOKEN }), { runProjections: false });
  try {
    for (const id of [active, pending]) {
      const types = (await service.store.readStream(`transfer-${id}`)).map((e) => e.type);
      expect(
        types.filter((type) => type === "TransferExpired"),
        types.join(", "),
      ).toHaveLength(1);
      expect(
        types.filter((type) => type === "TransferFilesDeleted"),
        types.join(", "),
      ).toHaveLength(1);
      expect(types).not.toContain("DownloadRecorded");
    }
  } finally {
    await service.close();
  }
}

onEmbeddedAndPostgres(
  "expiry across a restart",
  "a transfer expires, answers 410 and loses its file data after a SIGKILL and restart",
  expiryOutlivesRestart,
  180_000,
);
