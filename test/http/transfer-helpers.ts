import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import type { TestApp } from "../support/app.js";
import { registerAgent } from "./helpers.js";

export const MiB = 1024 * 1024;
/** The free plan of domain/plans/plans.json (spec section 8, 1 MB = 1,048,576 bytes). */
export const FREE = {
  transfersPerMonth: 50,
  maxFileSize: 50 * MiB,
  storageBytes: 250 * MiB,
  retentionSeconds: 24 * 3600,
};

/** A transfer as spec 2.3 and decisions 3.21 give it. */
export interface TransferBody {
  id: string;
  url: string;
  api_url: string;
  status: string;
  pending_reason: string | null;
  mode: string;
  sender: string;
  recipient: string;
  files: { name: string; size: number; type: string }[];
  file_count: number;
  total_size: number;
  max_downloads: number;
  downloads: number;
  is_encrypted: boolean;
  auto_delete: boolean;
  message: string | null;
  created_at: string;
  expires_at: string;
}

export interface DownloadBody {
  id: string;
  files: { file_name: string; download_url: string; size: number; encryption_iv: string | null }[];
  downloads: number;
  downloads_remaining: number;
  expires_at: string;
  auto_delete: boolean;
  is_encrypted: boolean;
  encrypted_key: string | null;
  encryption_algorithm: string | null;
  recipient_key_version: number | null;
  sender_signature: string | null;
  channel_id: string | null;
  encryption_salt: string | null;
  sender_public_key: string | null;
  recipient_public_key: string | null;
}

export interface PresignedBody {
  id: string;
  upload_urls: {
    file_id: string;
    file_name: string;
    upload_url: string;
    resumable_url: string;
    method: string;
    headers: Record<string, string>;
  }[];
  confirm_url: string;
  expires_at: string;
}

export const TRANSFER_KEYS = [
  "api_url",
  "auto_delete",
  "created_at",
  "downloads",
  "expires_at",
  "file_count",
  "files",
  "id",
  "is_encrypted",
  "max_downloads",
  "message",
  "mode",
  "pending_reason",
  "recipient",
  "request_id",
  "sender",
  "status",
  "total_size",
  "url",
];

export const DOWNLOAD_KEYS = [
  "auto_delete",
  "channel_id",
  "downloads",
  "downloads_remaining",
  "encrypted_key",
  "encryption_algorithm",
  "encryption_salt",
  "expires_at",
  "files",
  "id",
  "is_encrypted",
  "recipient_key_version",
  "recipient_public_key",
  "sender_public_key",
  "sender_signature",
];

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

/** Every field of spec 2.3 is there with its JSON type (numbers as numbers, never strings). */
export function expectTransferShape(body: TransferBody): void {
  expect(Object.keys(body).sort()).toEqual(TRANSFER_KEYS);
  expect(body.id).toMatch(/^tr_[0-9A-Za-z]+$/);
  for (const key of ["url", "api_url", "status", "mode", "sender", "recipient"] as const) {
    expect(typeof body[key], key).toBe("string");
  }
  for (const key of ["file_count", "total_size", "max_downloads", "downloads"] as const) {
    expect(Number.isInteger(body[key]), `${key} is a JSON integer`).toBe(true);
  }
  expect(typeof body.is_encrypted).toBe("boolean");
  expect(typeof body.auto_delete).toBe("boolean");
  expect(body.message === null || typeof body.message === "string").toBe(true);
  expect(body.pending_reason === null || typeof body.pending_reason === "string").toBe(true);
  expect(body.created_at).toMatch(ISO);
  expect(body.expires_at).toMatch(ISO);
  expect(Array.isArray(body.files)).toBe(true);
  for (const file of body.files) {
    expect(Object.keys(file).sort()).toEqual(["name", "size", "type"]);
    expect(typeof file.name).toBe("string");
    expect(Number.isInteger(file.size)).toBe(true);
    expect(typeof file.type).toBe("string");
  }
  expect(body.file_count).toBe(body.files.length);
  expect(body.total_size).toBe(body.files.reduce((sum, file) => sum + file.size, 0));
}

export interface FilePart {
  name: string;
  data: Uint8Array;
  type?: string;
}

/** Form fields: a list sends the field once per value, `undefined` leaves it out. */
export type Fields = Record<string, string | string[] | undefined>;

/** The bytes and content type of a multipart/form-data body, as a browser or fetch would send it. */
export async function multipart(
  fields: Fields,
  files: FilePart[],
): Promise<{ payload: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) form.append(name, one);
  }
  for (const file of files) {
    form.append("files", new File([file.data], file.name, file.type ? { type: file.type } : {}));
  }
  const response = new Response(form);
  const payload = Buffer.from(await response.arrayBuffer());
  const contentType = response.headers.get("content-type");
  if (!contentType) throw new Error("FormData gave no content type");
  return { payload, contentType };
}

export interface Agent {
  id: string;
  agent_id: string;
  public_key: string;
  key_version: number;
}

export interface Parties {
  apiKey: string;
  accountId: string;
  keyId: string;
  alice: Agent;
  bob: Agent;
}

/** A fresh account with two connected agents, "alice" and "bob" (the free plan allows two). */
export async function newParties(t: TestApp, plan = "free"): Promise<Parties> {
  const account = await t.newAccount(plan);
  const alice = await registerAgent(t, account.apiKey, { agent_id: "alice", name: "Alice" });
  const bob = await registerAgent(t, account.apiKey, { agent_id: "bob", name: "Bob" });
  return { ...account, alice, bob };
}

/** alice → bob, agent-to-agent. */
export const A2A: Fields = { sender: "alice", recipient: "bob", mode: "agent-to-agent" };

export const bytes = (size: number): Buffer => randomBytes(size);

/** POST /v1/transfers with a multipart body (`fields` default: alice → bob, agent-to-agent). */
export async function postTransfer(
  t: TestApp,
  key: string | null,
  files: FilePart[],
  fields: Fields = A2A,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  const { payload, contentType } = await multipart(fields, files);
  return t.app.inject({
    method: "POST",
    url: "/v1/transfers",
    payload,
    headers: {
      "content-type": contentType,
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...headers,
    },
  });
}

/** A 201 POST /v1/transfers; returns the transfer. */
export async function sendTransfer(
  t: TestApp,
  key: string,
  files: FilePart[] = [{ name: "hello.txt", data: Buffer.from("hello"), type: "text/plain" }],
  extra: Fields = {},
): Promise<TransferBody> {
  const res = await postTransfer(t, key, files, { ...A2A, ...extra });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as TransferBody;
}

export async function getTransfer(t: TestApp, key: string, id: string): Promise<LightMyRequestResponse> {
  return t.call("GET", `/v1/transfers/${id}`, { key });
}

/** GET /v1/transfers/{id}/download, optionally as one agent (X-Service-Agent). */
export async function download(
  t: TestApp,
  key: string,
  id: string,
  agent?: string,
): Promise<LightMyRequestResponse> {
  return t.call("GET", `/v1/transfers/${id}/download`, {
    key,
    ...(agent ? { headers: { "x-service-agent": agent } } : {}),
  });
}

/** A 200 download; returns its body. */
export async function downloadOk(t: TestApp, key: string, id: string, agent?: string): Promise<DownloadBody> {
  const res = await download(t, key, id, agent);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as DownloadBody;
}

/** The path (and query) of an absolute URL the service handed out, for app.inject. */
export const pathOf = (url: string): string => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};

/** GET a signed download link, without credentials. */
export async function fetchLink(
  t: TestApp,
  url: string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: "GET", url: pathOf(url), headers });
}

/** PUT a signed upload link with the headers it came with, without credentials. */
export async function putUpload(
  t: TestApp,
  upload: { upload_url: string; headers: Record<string, string> },
  body: Buffer,
): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "PUT",
    url: pathOf(upload.upload_url),
    headers: upload.headers,
    payload: body,
  });
}

export async function postPresigned(
  t: TestApp,
  key: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return t.call("POST", "/v1/transfers/presigned", { key, body: { ...body }, headers });
}

/** A 201 presigned transfer from alice to bob, with these files (`{name, size}` each). */
export async function presignedOk(
  t: TestApp,
  key: string,
  files: { name: string; size: number; content_type?: string; encryption_iv?: string }[],
  extra: Record<string, unknown> = {},
): Promise<PresignedBody> {
  const res = await postPresigned(t, key, {
    mode: "agent-to-agent",
    sender: "alice",
    recipient: "bob",
    files,
    ...extra,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as PresignedBody;
}

export async function confirm(t: TestApp, key: string, id: string): Promise<LightMyRequestResponse> {
  return t.call("POST", `/v1/transfers/${id}/confirm`, { key });
}

/** Uploads every file of a presigned transfer and confirms it; returns the active transfer. */
export async function presignedActive(
  t: TestApp,
  key: string,
  files: { name: string; data: Buffer; content_type?: string }[],
  extra: Record<string, unknown> = {},
): Promise<{ transfer: TransferBody; presigned: PresignedBody }> {
  const presigned = await presignedOk(
    t,
    key,
    files.map((file) => ({
      name: file.name,
      size: file.data.length,
      ...(file.content_type ? { content_type: file.content_type } : {}),
    })),
    extra,
  );
  for (const [index, upload] of presigned.upload_urls.entries()) {
    const data = files[index]?.data;
    if (!data) throw new Error("one upload URL per file");
    const res = await putUpload(t, upload, data);
    expect(res.statusCode, res.body).toBe(200);
  }
  const res = await confirm(t, key, presigned.id);
  expect(res.statusCode, res.body).toBe(200);
  return { transfer: res.json() as TransferBody, presigned };
}

/** Where the file data of a transfer lives on the filesystem blob store. */
export const blobDir = (t: TestApp, transferId: string): string =>
  join(t.service.config.dataDir, "blobs", "transfers", transferId);

/** The stored blob files of a transfer (empty once its data is deleted). */
export function blobFiles(t: TestApp, transferId: string): string[] {
  const dir = blobDir(t, transferId);
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Every transfer directory in the blob store. */
export function transferDirs(t: TestApp): string[] {
  const dir = join(t.service.config.dataDir, "blobs", "transfers");
  return existsSync(dir) ? readdirSync(dir) : [];
}

/** Partial uploads left in the blob store's temporary area. */
export function tempFiles(t: TestApp): string[] {
  const dir = join(t.service.config.dataDir, "blobs", ".tmp");
  // The store's heartbeat folder (owners/) lives there too; it holds no file data.
  return existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".part")) : [];
}

/** Polls until `check` holds (background work such as the housekeeper); fails after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  message: string,
  timeoutMs = 5000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${message}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** GET /v1/transfers with a query; asserts 200. */
export async function listTransfers(
  t: TestApp,
  key: string,
  query = "",
): Promise<{ transfers: TransferBody[]; total: number; limit: number; offset: number; has_more: boolean }> {
  const res = await t.call("GET", `/v1/transfers${query ? `?${query}` : ""}`, { key });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** Runs `body` with the housekeeper stopped, so what is checked is the answer before any clean-up. */
export async function withoutHousekeeper(t: TestApp, body: () => Promise<void>): Promise<void> {
  await t.service.housekeeper.stop();
  try {
    await body();
  } finally {
    t.service.housekeeper.start();
  }
}
