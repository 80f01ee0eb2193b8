import { randomBytes } from "node:crypto";
import { once } from "node:events";
import http from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { tempDir } from "../support/databases.js";
import { json, ServerProcess } from "../support/server-process.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The grace period of `handoff serve` (src/cli.ts). */
const GRACE_MS = 10_000;
/** Start-up (tsx and the embedded database) takes minutes when the whole suite runs on a busy 2-core machine. */
const START_TIMEOUT_MS = 180_000;
const TEST_TIMEOUT_MS = START_TIMEOUT_MS + 120_000;

/** The fields of a request log line these tests read. */
interface LogLine {
  msg?: string;
  request_id?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
}

/** An account with two connected agents; returns its API key. */
async function accountWithAgents(server: ServerProcess): Promise<string> {
  const created = await json<{ api_key: { api_key: string } }>(
    server,
    "POST",
    "/v1/admin/accounts",
    ADMIN_TOKEN,
    {
      email: `serve-${randomBytes(3).toString("hex")}@example.com`,
      plan: "scale",
    },
  );
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const apiKey = created.body.api_key.api_key;
  for (const slug of ["alice", "bob"]) {
    const agent = await json(server, "POST", "/v1/agents/register", apiKey, {
      agent_id: slug,
      name: slug,
      public_key: randomPublicKey(),
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  }
  return apiKey;
}

/**
 * A multipart POST /v1/transfers whose body is sent in two halves: `sendRest()` sends the second.
 * The answer (or the error, if the connection is cut) is in `result`.
 */
function slowUpload(server: ServerProcess, apiKey: string, size: number) {
  const boundary = `----serve-test-${randomBytes(8).toString("hex")}`;
  const fields = { sender: "alice", recipient: "bob", mode: "agent-to-agent" };
  let head = "";
  for (const [name, value] of Object.entries(fields))
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  head += `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const data = randomBytes(size);
  const body = Buffer.concat([Buffer.from(head), data, Buffer.from(tail)]);
  const half = Math.floor(body.length / 2);
  const request = http.request(`${server.baseUrl}/v1/transfers`, {
    method: "POST",
    agent: false,
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": `multipart/form-data; boundary=${boundary}`,
      "content-length": body.length,
    },
  });
  const result = new Promise<{ status: number; body: string } | { error: string }>((resolve) => {
    request.on("response", async (response) => {
      let text = "";
      for await (const chunk of response) text += chunk;
      resolve({ status: response.statusCode ?? 0, body: text });
    });
    request.on("error", (error) => resolve({ error: error.message }));
  });
  request.write(body.subarray(0, half));
  return { result, sendRest: () => request.end(body.subarray(half)) };
}

const exited = (server: ServerProcess) =>
  server.child.exitCode !== null
    ? Promise.resolve(server.child.exitCode)
    : once(server.child, "exit").then(([code]) => code as number | null);

describe("handoff serve", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function start(): Promise<ServerProcess> {
    const dir = tempDir();
    const server = await ServerProcess.start(
      { DATA_DIR: dir.path, ADMIN_TOKEN },
      { captureLog: true, readyTimeoutMs: START_TIMEOUT_MS },
    );
    cleanups.push(
      () => server.kill(),
      () => dir.remove(),
    );
    return server;
  }

  /** A server with half an upload in flight, then SIGTERM: the upload, the exit code and when the signal went. */
  async function sigtermDuringUpload() {
    const server = await start();
    const apiKey = await accountWithAgents(server);
    const upload = slowUpload(server, apiKey, 256 * 1024);
    await sleep(500);
    const exit = exited(server);
    const signalled = Date.now();
    server.child.kill("SIGTERM");
    return { server, upload, exit, signalled };
  }

  it(
    "on SIGTERM finishes an upload in flight, then exits 0",
    async () => {
      const { server, upload, exit, signalled } = await sigtermDuringUpload();
      await sleep(500);
      expect(server.child.exitCode, "still serving the upload in flight").toBeNull();
      upload.sendRest();

      const answer = await upload.result;
      expect("status" in answer && answer.status, JSON.stringify(answer)).toBe(201);
      expect(await exit).toBe(0);
      expect(Date.now() - signalled).toBeLessThan(GRACE_MS);
      expect(server.log).toContain('"msg":"stopped"');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "on SIGTERM cuts a stalled request off after the grace period and still exits 0",
    async () => {
      const { upload, exit, signalled } = await sigtermDuringUpload();
      expect(await exit).toBe(0);
      const took = Date.now() - signalled;
      expect(took).toBeGreaterThanOrEqual(GRACE_MS - 500);
      expect(took).toBeLessThan(GRACE_MS + 5000);
      expect(await upload.result).toHaveProperty("error");
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "logs each request as JSON with its request id, and no credential",
    async () => {
      const server = await start();
      const apiKey = await accountWithAgents(server);
      const listed = await fetch(`${server.baseUrl}/v1/transfers`, {
        headers: { authorization: `Bearer ${apiKey}`, "x-request-id": "trace-me-7" },
      });
      expect(listed.status).toBe(200);
      expect(listed.headers.get("x-request-id")).toBe("trace-me-7");
      const secretLink = `signed-link-token-${randomBytes(8).toString("hex")}`;
      const file = await fetch(`${server.baseUrl}/v1/files/${secretLink}?token=${secretLink}`);
      expect(file.status).toBe(403);
      await server.kill("SIGTERM");

      const lines = server.log
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as LogLine);
      const traced = lines.filter((line) => line.request_id === "trace-me-7");
      expect(traced.map((line) => line.msg)).toEqual(["request completed"]);
      expect(traced[0]?.req).toMatchObject({ method: "GET", url: "/v1/transfers" });
      expect(traced[0]?.res).toMatchObject({ statusCode: 200 });
      expect(traced[0]?.responseTime).toBeGreaterThan(0);
      const fileLines = lines.filter((line) => line.req?.url?.startsWith("/v1/files/"));
      expect(fileLines[0]?.req?.url).toBe("/v1/files/[redacted]?token=%5Bredacted%5D");
      expect(server.log).not.toContain(apiKey);
      expect(server.log).not.toContain(secretLink);
      expect(server.log).not.toContain(ADMIN_TOKEN);
    },
    TEST_TIMEOUT_MS,
  );
});
