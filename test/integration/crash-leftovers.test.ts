import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey } from "../support/app.js";
import { tempDir } from "../support/databases.js";
import { ServerProcess } from "../support/server-process.js";

/** Seeded, so a failing round can be replayed: CRASH_SEED=<seed> npx vitest run <this file>. */
const SEED = Number(process.env.CRASH_SEED ?? 20_261_124);
const ROUNDS = 3;
const UPLOADS_PER_ROUND = 2;
const FILES_PER_UPLOAD = 3;
const FILE_BYTES = 4 * 1024 * 1024;
const CHUNK = 256 * 1024;

/** mulberry32: a small seeded PRNG in [0, 1). */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = Math.imul(state ^ (state >>> 15), 1 | state);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function call<Answer>(
  baseUrl: string,
  method: string,
  path: string,
  key: string,
  body?: unknown,
): Promise<Answer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (response.status >= 300)
    throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return (await response.json()) as Answer;
}

/**
 * A multipart transfer of several large files, streamed chunk by chunk with short random pauses
 * between files, so that a kill lands before, between or after files. Resolves however it ends.
 */
function streamUpload(baseUrl: string, apiKey: string, rng: () => number): Promise<void> {
  const boundary = `crash${randomBytes(8).toString("hex")}`;
  return new Promise((resolve) => {
    const req = request(`${baseUrl}/v1/transfers`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${apiKey}`,
        "content-type": `multipart/form-data; boundary=${boundary}`,
      },
    });
    req.on("error", () => resolve());
    req.on("response", (response) => {
      response.resume();
      response.on("end", resolve);
      response.on("error", () => resolve());
    });
    const write = (data: string | Buffer) =>
      new Promise<void>((done) => (req.write(data) ? done() : req.once("drain", done)));
    void (async () => {
      try {
        for (const [name, value] of [
          ["sender", "alice"],
          ["recipient", "bob"],
          ["mode", "agent-to-agent"],
        ]) {
          await write(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
        }
        for (let file = 0; file < FILES_PER_UPLOAD; file++) {
          await write(
            `--${boundary}\r\nContent-Disposition: form-data; name="files"; filename="f${file}.bin"\r\n` +
              "Content-Type: application/octet-stream\r\n\r\n",
          );
          for (let sent = 0; sent < FILE_BYTES; sent += CHUNK) await write(randomBytes(CHUNK));
          await write("\r\n");
          await sleep(rng() * 150);
        }
        req.end(`--${boundary}--\r\n`);
      } catch {
        resolve();
      }
    })();
  });
}

interface Disk {
  parts: string[];
  transferDirs: string[];
}

function disk(dataDir: string): Disk {
  const list = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);
  return {
    parts: list(join(dataDir, "blobs", ".tmp")).filter((name) => name.endsWith(".part")),
    transferDirs: list(join(dataDir, "blobs", "transfers")),
  };
}

interface Listed {
  id: string;
  status: string;
  file_count: number;
}

/** The account's transfers as the log (through its read model) has them. */
async function transfersInLog(baseUrl: string, apiKey: string): Promise<Listed[]> {
  return (await call<{ transfers: Listed[] }>(baseUrl, "GET", "/v1/transfers?limit=100", apiKey)).transfers;
}

/**
 * Storage equals what the log says: no temporary files, no directory without its transfer, and
 * every active transfer's files all there. Returns what differs (empty when equal).
 */
async function differences(baseUrl: string, apiKey: string, dataDir: string): Promise<string[]> {
  const transfers = await transfersInLog(baseUrl, apiKey);
  const ids = new Set(transfers.map((transfer) => transfer.id));
  const { parts, transferDirs } = disk(dataDir);
  const problems = [
    ...parts.map((part) => `temporary file ${part}`),
    ...transferDirs.filter((dir) => !ids.has(dir)).map((dir) => `blobs without a transfer: ${dir}`),
  ];
  for (const transfer of transfers.filter((one) => one.status === "active")) {
    const dir = join(dataDir, "blobs", "transfers", transfer.id);
    const stored = existsSync(dir) ? readdirSync(dir).length : 0;
    if (stored !== transfer.file_count)
      problems.push(`${transfer.id}: ${stored} of ${transfer.file_count} files`);
  }
  return problems;
}

/** Waits up to one housekeeping cycle (the start-up sweep, then the first tick) for storage to match the log. */
async function converges(baseUrl: string, apiKey: string, dataDir: string): Promise<string[]> {
  let problems: string[] = [];
  for (const deadline = Date.now() + 5000; Date.now() < deadline; await sleep(200)) {
    problems = await differences(baseUrl, apiKey, dataDir);
    if (problems.length === 0) break;
  }
  return problems;
}

describe("crash leftovers (kill -9 during large multi-file uploads)", () => {
  const dir = tempDir();
  afterAll(() => dir.remove());

  it(`storage on disk equals the log after every restart (seed ${SEED}, ${ROUNDS} rounds)`, async () => {
    const rng = random(SEED);
    const env = { DATA_DIR: dir.path, ADMIN_TOKEN };
    let apiKey = "";
    let leftBehind: Disk = { parts: [], transferDirs: [] };
    let leftovers = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      const server = await ServerProcess.start(env);
      try {
        if (round === 0) {
          const created = await call<{ api_key: { api_key: string } }>(
            server.baseUrl,
            "POST",
            "/v1/admin/accounts",
            ADMIN_TOKEN,
            {
              email: `crash-${randomBytes(4).toString("hex")}@example.com`,
              plan: "scale",
            },
          );
          apiKey = created.api_key.api_key;
          for (const agent of ["alice", "bob"]) {
            await call(server.baseUrl, "POST", "/v1/agents/register", apiKey, {
              agent_id: agent,
              public_key: randomPublicKey(),
            });
          }
        } else {
          const ids = new Set((await transfersInLog(server.baseUrl, apiKey)).map((transfer) => transfer.id));
          leftovers += leftBehind.parts.length + leftBehind.transferDirs.filter((id) => !ids.has(id)).length;
          expect(await converges(server.baseUrl, apiKey, dir.path), `after restart ${round}`).toEqual([]);
        }
        if (round === ROUNDS) break;
        const uploads = Array.from({ length: UPLOADS_PER_ROUND }, () =>
          streamUpload(server.baseUrl, apiKey, rng),
        );
        await sleep(100 + rng() * 1200);
        await server.kill("SIGKILL");
        await Promise.all(uploads);
        leftBehind = disk(dir.path);
      } finally {
        await server.kill("SIGTERM");
      }
    }
    // The kills must have left something behind, or this test proved nothing.
    expect(leftovers).toBeGreaterThan(0);
  }, 300_000);
});
