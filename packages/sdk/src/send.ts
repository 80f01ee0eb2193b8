import { randomBytes } from "node:crypto";
import { lstat, readdir, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import mime from "mime";
import {
  encryptedSize,
  fromBase64,
  newContentKey,
  SALT_SIZE,
  signTransfer,
  toBase64,
  wrapContentKey,
} from "./crypto/index.js";
import { encryptedFileBatchesFrom } from "./encrypted-file.js";
import { HandoffError } from "./errors.js";
import { fileNameProblem, MAX_FILES_PER_TRANSFER } from "./file-names.js";
import type { Transport } from "./http.js";
import type { Identity } from "./identity.js";
import { multipartBody } from "./multipart.js";
import { RESUMABLE_FROM, uploadResumable } from "./resumable.js";
import type { BodyBatches } from "./streaming-request.js";
import { sizedFileBatches } from "./streams.js";
import type {
  ExpiresIn,
  PresignedAnswer,
  ResolvedAgent,
  SendMode,
  Transfer,
  TransferFields,
  TransferForm,
} from "./types.js";

/** Bytes of one file moved so far (plaintext), out of its plaintext size. */
export interface Progress {
  file: string;
  bytes: number;
  total: number;
}

export interface SendOptions {
  /** An agent slug (or UUID), or an e-mail address for agent-to-human. */
  to: string;
  /** Files, and folders whose regular files go with names relative to the folder's parent (7.3). */
  paths: string[];
  /** Picks the recipient's account when its slug is on several (AMBIGUOUS_RECIPIENT). */
  account?: string;
  message?: string;
  maxDownloads?: number;
  /** How long the transfer lives: `1h`, `12h`, `24h` (the default), `7d`, `14d`, `30d` or `90d`. */
  expiresIn?: ExpiresIn;
  autoDelete?: boolean;
  /** Sends the files unencrypted (is_encrypted=false). */
  plain?: boolean;
  /** Accepts changed keys of the recipient instead of refusing them (see resolve). */
  acceptRotation?: boolean;
  onProgress?: (progress: Progress) => void;
  /**
   * Called once a presigned transfer is declared and before its first byte is sent, with what
   * resumeSend needs to finish it after a crash (decisions 7.2); the CLI keeps it in a file.
   */
  onStarted?: (state: SendState) => void | Promise<void>;
}

/** What finishing an interrupted presigned send takes (decisions 7.2): a secret while K is in it. */
export interface SendState {
  transfer_id: string;
  /** When the upload links expire: the send can no longer be finished after it. */
  expires_at: string;
  /** K, the transfer's content key (base64); null when the files go unencrypted. */
  content_key: string | null;
  files: SendStateFile[];
}

export interface SendStateFile {
  /** The absolute path the bytes are read from. */
  path: string;
  name: string;
  /** The file's size and modification time when the send began: a changed file is refused. */
  size: number;
  modified_ms: number;
  resumable_url: string;
  encryption_iv: string | null;
}

/**
 * At or above this many bytes on the wire a transfer goes presigned (create, PUT each file to its
 * link, confirm), so large files can go straight to object storage; below it, one multipart POST.
 */
export const PRESIGNED_THRESHOLD = 8 * 1024 * 1024;

export interface SendContext {
  transport: Transport;
  identity: Identity;
  presignedThreshold: number;
  resolve(recipient: string, options: { account?: string; acceptRotation?: boolean }): Promise<ResolvedAgent>;
}

/** One file as it goes out: opened afresh for each attempt, identical bytes each time. */
export interface Outgoing {
  name: string;
  type: string;
  wireSize: number;
  encryptionIv: string | null;
  /** The wire bytes from `offset` (a resumed upload) to the end. */
  open(offset?: number): BodyBatches;
}

/** The encryption of one transfer (5.2, 5.4), fixed before the first byte leaves. */
interface Sealing {
  contentKey: Uint8Array;
  encryptedKey: string;
  recipientKeyVersion: number;
  signature: string;
  salts: Uint8Array[];
}

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;

export interface LocalFile {
  path: string;
  name: string;
  type: string;
  size: number;
  modifiedMs: number;
}

/** A path to send: a file, or a folder whose regular files go with their relative names (7.3). */
async function localFiles(path: string): Promise<LocalFile[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (error) {
    throw new HandoffError("FILE_NOT_FOUND", `cannot read ${path}: ${(error as NodeJS.ErrnoException).code}`);
  }
  if (info.isDirectory()) return folderFiles(path, basename(path));
  if (!info.isFile()) throw new HandoffError("NOT_A_FILE", `${path} is not a regular file`);
  return [localFile(path, basename(path), info)];
}

/**
 * The regular files under a folder, hidden ones included, named relative to the folder's parent
 * (`DIR/a/b.txt`), in name order. Symbolic links are skipped, never followed, and so are devices,
 * sockets and pipes.
 */
async function folderFiles(dir: string, name: string): Promise<LocalFile[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
  const files: LocalFile[] = [];
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await folderFiles(path, `${name}/${entry.name}`)));
    else if (entry.isFile()) files.push(localFile(path, `${name}/${entry.name}`, await lstat(path)));
  }
  return files;
}

function localFile(path: string, name: string, info: { size: number; mtimeMs: number }): LocalFile {
  const problem = fileNameProblem(name);
  if (problem)
    throw new HandoffError("INVALID_FILE_NAME", `cannot send ${path} as ${JSON.stringify(name)}: ${problem}`);
  const type = mime.getType(name) ?? "application/octet-stream";
  return { path, name, type, size: info.size, modifiedMs: info.mtimeMs };
}

/** A fresh content key wrapped to `publicKey` (5.2), and a fresh salt for each of `count` files (5.3). */
export async function wrapFor(publicKey: string, count: number) {
  const contentKey = newContentKey();
  const encryptedKey = await wrapContentKey(contentKey, fromBase64(publicKey));
  const salts = Array.from({ length: count }, () => new Uint8Array(randomBytes(SALT_SIZE)));
  return { contentKey, encryptedKey, salts };
}

async function seal(context: SendContext, options: SendOptions, files: LocalFile[]): Promise<Sealing> {
  const recipient = await context.resolve(options.to, {
    ...(options.account !== undefined ? { account: options.account } : {}),
    acceptRotation: options.acceptRotation ?? false,
  });
  // resolve() refuses an agent without keys, so both are set here.
  const publicKey = recipient.public_key as string;
  const recipientKeyVersion = recipient.key_version as number;
  const { contentKey, encryptedKey, salts } = await wrapFor(publicKey, files.length);
  const signature = signTransfer(context.identity.ed25519.privateKey, {
    sender: context.identity.agentId,
    recipient: options.to,
    recipientKeyVersion,
    encryptedKey,
    files: files.map((file, index) => ({
      name: file.name,
      encryptionIv: toBase64(salts[index] as Uint8Array),
    })),
  });
  return { contentKey, encryptedKey, recipientKeyVersion, signature, salts };
}

/** A file's encryption (5.3): the transfer's content key and the file's own salt. */
interface FileSealing {
  contentKey: Uint8Array;
  salt: Uint8Array;
}

export function outgoing(
  file: LocalFile,
  sealing: FileSealing | null,
  onProgress: SendOptions["onProgress"],
): Outgoing {
  return {
    name: file.name,
    type: file.type,
    wireSize: sealing ? encryptedSize(file.size) : file.size,
    encryptionIv: sealing ? toBase64(sealing.salt) : null,
    open(offset = 0) {
      const onBytes = (bytes: number) => onProgress?.({ file: file.name, bytes, total: file.size });
      if (!sealing) return sizedFileBatches(file.path, file.size, onBytes, offset);
      // The same key and salt give the same bytes: a retried upload matches the signed list.
      return encryptedFileBatchesFrom(
        file.path,
        file.size,
        sealing.contentKey,
        sealing.salt,
        onBytes,
        offset,
      );
    },
  };
}

function fileSealing(sealing: Sealing | null, index: number): FileSealing | null {
  const salt = sealing?.salts[index];
  return sealing && salt ? { contentKey: sealing.contentKey, salt } : null;
}

/** The fields both upload paths share, typed from the contract: a renamed or retyped field fails to compile here. */
function transferFields(
  context: SendContext,
  options: SendOptions,
  mode: SendMode,
  sealing: Sealing | null,
): TransferFields {
  return {
    mode,
    sender: context.identity.agentId,
    recipient: options.to,
    recipient_account: options.account,
    is_encrypted: sealing !== null,
    message: options.message,
    max_downloads: options.maxDownloads,
    expires_in: options.expiresIn,
    auto_delete: options.autoDelete,
    encrypted_key: sealing?.encryptedKey,
    encryption_algorithm: sealing ? "AES-256-GCM" : undefined,
    sender_signature: sealing?.signature,
    recipient_key_version: sealing?.recipientKeyVersion,
  };
}

/** The fields as the multipart form's text parts; a field the form does not name fails to compile here. */
function formFieldsOf(fields: TransferFields): [keyof TransferForm, string][] {
  return Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => [name as keyof TransferFields, String(value)]);
}

async function sendMultipart(
  transport: Transport,
  fields: TransferFields,
  files: Outgoing[],
): Promise<Transfer> {
  const formFields: [string, string][] = formFieldsOf(fields);
  for (const file of files) if (file.encryptionIv) formFields.push(["encryption_iv", file.encryptionIv]);
  const body = multipartBody(
    formFields,
    files.map((file) => ({ name: file.name, type: file.type, size: file.wireSize, open: file.open })),
  );
  return transport.json<Transfer>({
    method: "POST",
    url: "/v1/transfers",
    idempotent: true,
    body: () => ({
      body: body.batches(),
      headers: { "content-type": body.contentType, "content-length": String(body.length) },
    }),
  });
}

/** A presigned send: what it declares and sends, and who hears of it before its first byte. */
interface PresignedSend {
  fields: TransferFields;
  files: LocalFile[];
  out: Outgoing[];
  sealing: Sealing | null;
  onStarted: SendOptions["onStarted"];
}

async function sendPresigned(transport: Transport, send: PresignedSend): Promise<Transfer> {
  const { fields, out: files } = send;
  const created = await transport.json<PresignedAnswer>({
    method: "POST",
    url: "/v1/transfers/presigned",
    idempotent: true,
    json: {
      ...fields,
      files: files.map((file) => ({
        name: file.name,
        size: file.wireSize,
        content_type: file.type,
        ...(file.encryptionIv ? { encryption_iv: file.encryptionIv } : {}),
      })),
    },
  });
  const links = linksInOrder(files, created.upload_urls);
  await send.onStarted?.(sendState(created, send.files, links, send.sealing));
  await uploadFiles(transport, files, links);
  return confirm(transport, created.id);
}

type UploadLink = PresignedAnswer["upload_urls"][number];

/**
 * Sends each file to its upload link, in order: from RESUMABLE_FROM bytes through its tus
 * resource, resumed from the server's offset if the connection drops (decisions 7.2), else one PUT.
 */
export async function uploadFiles(
  transport: Transport,
  files: Outgoing[],
  links: UploadLink[],
): Promise<void> {
  for (const [index, file] of files.entries()) {
    const link = links[index] as UploadLink;
    if (file.wireSize >= RESUMABLE_FROM) {
      await uploadResumable(transport, {
        url: link.resumable_url,
        size: file.wireSize,
        open: file.open,
        knownOffset: 0,
      });
      continue;
    }
    await transport.send({
      method: link.method,
      url: link.upload_url,
      idempotent: true,
      body: () => ({
        body: file.open(),
        headers: { ...link.headers, "content-length": String(file.wireSize) },
      }),
    });
  }
}

/** Upload links in the order of `files`, each checked to name its file. */
export function linksInOrder(files: Outgoing[], links: UploadLink[]): UploadLink[] {
  return files.map((file, index) => {
    const link = links[index];
    if (link?.file_name !== file.name)
      throw new HandoffError("UNEXPECTED_ANSWER", `the server gave no upload link for ${file.name}`);
    return link;
  });
}

function sendState(
  created: PresignedAnswer,
  files: LocalFile[],
  links: PresignedAnswer["upload_urls"],
  sealing: Sealing | null,
): SendState {
  return {
    transfer_id: created.id,
    expires_at: created.expires_at,
    content_key: sealing ? toBase64(sealing.contentKey) : null,
    files: files.map((file, index) => {
      const salt = sealing?.salts[index];
      return {
        path: file.path,
        name: file.name,
        size: file.size,
        modified_ms: file.modifiedMs,
        resumable_url: (links[index] as (typeof links)[number]).resumable_url,
        encryption_iv: salt ? toBase64(salt) : null,
      };
    }),
  };
}

/** The API's own confirm path on our base URL: the API key goes to no other host. */
function confirm(transport: Transport, transferId: string): Promise<Transfer> {
  return transport.json<Transfer>({
    method: "POST",
    url: `/v1/transfers/${encodeURIComponent(transferId)}/confirm`,
    idempotent: true,
  });
}

/**
 * Finishes a presigned send that was interrupted (decisions 7.2): asks the server where each
 * file's upload stands (tus HEAD), sends the rest of each from there, the encrypted ones sealed
 * again from the record holding the offset with the same K and salt, and confirms. Refuses a
 * transfer that no longer takes uploads and a file that changed since the send began.
 */
export async function resumeSend(
  transport: Transport,
  state: SendState,
  options: { onProgress?: SendOptions["onProgress"] } = {},
): Promise<Transfer> {
  const id = state.transfer_id;
  const transfer = await transport.json<Transfer>({
    method: "GET",
    url: `/v1/transfers/${encodeURIComponent(id)}`,
    idempotent: true,
  });
  if (transfer.status !== "pending" && transfer.status !== "expired")
    throw new HandoffError(
      "ALREADY_CONFIRMED",
      `transfer ${id} was already confirmed (status ${transfer.status}): nothing is left to send`,
    );
  if (transfer.status === "expired" || Date.parse(state.expires_at) <= Date.now())
    throw new HandoffError(
      "TRANSFER_EXPIRED",
      `the upload links of transfer ${id} expired (${state.expires_at}) before its files were all sent: send them again`,
    );
  const contentKey = state.content_key ? fromBase64(state.content_key) : null;
  for (const file of state.files) {
    const local = await unchangedFile(file);
    const salt = file.encryption_iv ? fromBase64(file.encryption_iv) : null;
    const out = outgoing(local, contentKey && salt ? { contentKey, salt } : null, options.onProgress);
    await uploadResumable(transport, {
      url: file.resumable_url,
      size: out.wireSize,
      open: out.open,
      knownOffset: null,
    });
  }
  return confirm(transport, id);
}

/** The file of a send being resumed, as long as it is the one the send began with. */
async function unchangedFile(file: SendStateFile): Promise<LocalFile> {
  const info = await stat(file.path).catch(() => null);
  // Within 1 ms is the same time: the Python client rounds a modification time differently.
  if (!info?.isFile() || info.size !== file.size || Math.abs(info.mtimeMs - file.modified_ms) >= 1)
    throw new HandoffError(
      "FILE_CHANGED",
      `${file.path} changed since the send began: the bytes already sent would no longer match it`,
    );
  return localFile(file.path, file.name, info);
}

/** The files `paths` name (folders as 7.3 says), at least one and at most a transfer's worth. */
export async function filesToSend(paths: string[]): Promise<LocalFile[]> {
  if (paths.length === 0) throw new HandoffError("NO_FILES", "send needs at least one file");
  const files = (await Promise.all(paths.map(localFiles))).flat();
  if (files.length === 0) throw new HandoffError("NO_FILES", "the folders given hold no regular file");
  if (files.length > MAX_FILES_PER_TRANSFER)
    throw new HandoffError(
      "TOO_MANY_FILES",
      `a transfer holds at most ${MAX_FILES_PER_TRANSFER} files, not ${files.length}`,
    );
  return files;
}

/**
 * Sends files (decisions 5.2–5.4): resolves and pins the recipient, wraps a fresh content key to
 * it, signs the file list, then streams each file from disk through encryption to the network.
 * An e-mail recipient is agent-to-human: plain multipart, which the server encrypts at rest.
 */
export async function send(context: SendContext, options: SendOptions): Promise<Transfer> {
  const mode: SendMode = EMAIL.test(options.to) ? "agent-to-human" : "agent-to-agent";
  const files = await filesToSend(options.paths);
  const sealing = mode === "agent-to-agent" && !options.plain ? await seal(context, options, files) : null;
  const out = files.map((file, index) => outgoing(file, fileSealing(sealing, index), options.onProgress));
  const fields = transferFields(context, options, mode, sealing);
  const wireTotal = out.reduce((sum, file) => sum + file.wireSize, 0);
  // Presigned transfers cannot go to people: the server must see those bytes to encrypt them at rest.
  if (mode === "agent-to-agent" && wireTotal >= context.presignedThreshold) {
    return sendPresigned(context.transport, { fields, files, out, sealing, onStarted: options.onStarted });
  }
  return sendMultipart(context.transport, fields, out);
}
