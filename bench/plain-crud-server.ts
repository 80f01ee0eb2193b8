/**
 * The small-transfer baseline: a plain node:http + pg service doing the same durable work per
 * transfer as Handoff, and nothing else (no events, no read models, no framework, no auth):
 *
 *   POST /transfers            the body (raw bytes) written to a file and fsynced, then one SQL
 *                              statement that takes the storage quota and inserts the row with
 *                              the `X-Max-Downloads` it was asked for (default 10, as Handoff's)
 *                              → 201 {"id"}, or 413 over quota
 *   GET  /transfers/<id>/download
 *                              one statement: counts the download if one is left, and when it is
 *                              the last one marks the transfer downloaded, schedules its file for
 *                              deletion once the link has run out (15 minutes) and gives its bytes
 *                              back to the account's storage, as Handoff's rules require of an
 *                              auto_delete transfer (decisions 3.3, 3.14) → 200 {"url"}, or 410
 *                              when no download is left
 *   GET  /files/<id>           the file streamed back
 *
 *   DATABASE_URL=postgres://… BASELINE_DIR=/tmp/x PORT=9000 node --import tsx bench/plain-crud-server.ts
 *
 * The caller names its account in `X-Account` (accounts are created on first use with a quota of
 * BASELINE_QUOTA_BYTES, default 1 TiB). Its pool holds 10 connections, as Handoff's does. Handoff's
 * housekeeper deletes the scheduled files every second; nothing is due within a run, so the
 * baseline has no sweeper.
 */
import { randomUUID } from "node:crypto";
import { mkdir, open, rm } from "node:fs/promises";
import http from "node:http";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import pg from "pg";
import { answer } from "./answer.js";

const databaseUrl = process.env.DATABASE_URL;
const dir = process.env.BASELINE_DIR;
if (!databaseUrl || !dir) throw new Error("DATABASE_URL and BASELINE_DIR are required");
const port = Number(process.env.PORT ?? 0);
const host = process.env.HOST ?? "127.0.0.1";
const quotaBytes = Number(process.env.BASELINE_QUOTA_BYTES ?? 2 ** 40);
/** Handoff's default max_downloads (spec 2.3). */
const DEFAULT_MAX_DOWNLOADS = 10;
/** Decisions 3.16: a download link lives 15 minutes, and the file must outlive it. */
const LINK_LIFETIME = "15 minutes";
const MAX_BODY = 64 * 1024 * 1024;

const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
await pool.query(`
  create table if not exists accounts (
    id text primary key,
    storage_used bigint not null default 0,
    storage_quota bigint not null
  );
  create table if not exists transfers (
    id uuid primary key,
    account_id text not null references accounts (id),
    size bigint not null,
    downloads int not null default 0,
    max_downloads int not null,
    status text not null default 'active',
    purge_after timestamptz,
    created_at timestamptz not null default now()
  );`);
await mkdir(dir, { recursive: true });

/** Takes `size` bytes of the account's quota and inserts the transfer, in one statement. */
const INSERT_WITHIN_QUOTA = `
  with account as (
    insert into accounts (id, storage_used, storage_quota) values ($2, $3, $5)
    on conflict (id) do update set storage_used = accounts.storage_used + $3
      where accounts.storage_used + $3 <= accounts.storage_quota
    returning id
  )
  insert into transfers (id, account_id, size, max_downloads)
  select $1, id, $3, $4 from account
  returning id`;

/**
 * Counts a download while one is left; the last one also marks the transfer downloaded, schedules
 * its file's deletion and releases its storage, all in the same statement.
 */
const COUNT_DOWNLOAD = `
  with counted as (
    update transfers
       set downloads = downloads + 1,
           status = case when downloads + 1 = max_downloads then 'downloaded' else status end,
           purge_after = case when downloads + 1 = max_downloads
                              then now() + interval '${LINK_LIFETIME}' else purge_after end
     where id = $1 and status = 'active' and downloads < max_downloads
    returning id, account_id, size, status
  ), released as (
    update accounts set storage_used = storage_used - counted.size
      from counted
     where accounts.id = counted.account_id and counted.status = 'downloaded'
  )
  select id from counted`;

async function readBody(request: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Error("body too large");
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Writes the file and fsyncs it before the row exists, as Handoff's blob store does. */
async function writeDurably(path: string, body: Buffer): Promise<void> {
  const file = await open(path, "wx", 0o600);
  try {
    await file.writeFile(body);
    await file.sync();
  } finally {
    await file.close();
  }
}

async function create(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const account = String(request.headers["x-account"] ?? "default");
  const maxDownloads = Number(request.headers["x-max-downloads"] ?? DEFAULT_MAX_DOWNLOADS);
  const body = await readBody(request);
  const id = randomUUID();
  const path = join(dir as string, id);
  await writeDurably(path, body);
  const inserted = await pool.query(INSERT_WITHIN_QUOTA, [
    id,
    account,
    body.length,
    maxDownloads,
    quotaBytes,
  ]);
  if (inserted.rowCount === 0) {
    await rm(path, { force: true });
    return answer(response, 413, { error: "storage quota exceeded" });
  }
  answer(response, 201, { id, size: body.length });
}

async function download(id: string, response: http.ServerResponse): Promise<void> {
  const counted = await pool.query(COUNT_DOWNLOAD, [id]);
  if (counted.rowCount === 0) return answer(response, 410, { error: "no download left" });
  answer(response, 200, { url: `http://${host}:${boundPort()}/files/${id}` });
}

async function fetchFile(id: string, response: http.ServerResponse): Promise<void> {
  const file = await open(join(dir as string, id), "r");
  const { size } = await file.stat();
  response.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
  await pipeline(file.createReadStream(), response);
}

const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const DOWNLOAD_PATH = new RegExp(`^/transfers/(${UUID})/download$`);
const FILE_PATH = new RegExp(`^/files/(${UUID})$`);

const server = http.createServer(async (request, response) => {
  try {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    if (path === "/healthz") return answer(response, 200, { status: "ok" });
    if (request.method === "POST" && path === "/transfers") return await create(request, response);
    const downloadId = request.method === "GET" ? DOWNLOAD_PATH.exec(path)?.[1] : undefined;
    if (downloadId) return await download(downloadId, response);
    const fileId = request.method === "GET" ? FILE_PATH.exec(path)?.[1] : undefined;
    if (fileId) return await fetchFile(fileId, response);
    return answer(response, 404, { error: "not found" });
  } catch (error) {
    if (!response.headersSent) answer(response, 500, { error: String(error) });
    else response.destroy();
  }
});

function boundPort(): number {
  const address = server.address();
  return address && typeof address === "object" ? address.port : port;
}

server.listen(port, host, () => {
  console.log(`plain CRUD baseline on http://${host}:${boundPort()}, files in ${dir}`);
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    server.close(() => void pool.end().then(() => process.exit(0)));
    server.closeIdleConnections();
  });
}
