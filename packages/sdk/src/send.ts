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
import { encryptedFileBatches } from "./encrypted-file.js";
import { HandoffError } from "./errors.js";
import { fileNameProblem, MAX_FILES_PER_TRANSFER } from "./file-names.js";
import type { Transport } from "./http.js";
import type { Identity } from "./identity.js";
import { multipartBody } from "./multipart.js";
import type { BodyBatches } from "./streaming-request.js";
import { sizedFileBatches } from "./streams.js";
import type { PresignedAnswer, ResolvedAgent, Transfer, TransferMode } from "./types.js";

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
  /** `1h`, `12h`, `24h`, `7d`, `14d`, `30d` or `90d`. */
  expiresIn?: string;
  autoDelete?: boolean;
  /** Sends the files unencrypted (is_encrypted=false). */
  plain?: boolean;
  /** Accepts changed keys of the recipient instead of refusing them (see resolve). */
  acceptRotation?: boolean;
  onProgress?: (progress: Progress) => void;
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
interface Outgoing {
  name: string;
  type: string;
  wireSize: number;
  encryptionIv: string | null;
  open(): BodyBatches;
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

interface LocalFile {
  path: string;
  name: string;
  type: string;
  size: number;
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
  return [localFile(path, basename(path), info.size)];
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
    else if (entry.isFile()) files.push(localFile(path, `${name}/${entry.name}`, (await lstat(path)).size));
  }
  return files;
}

function localFile(path: string, name: string, size: number): LocalFile {
  const problem = fileNameProblem(name);
  if (problem)
    throw new HandoffError("INVALID_FILE_NAME", `cannot send ${path} as ${JSON.stringify(name)}: ${problem}`);
  return { path, name, type: mime.getType(name) ?? "application/octet-stream", size };
}

async function seal(context: SendContext, options: SendOptions, files: LocalFile[]): Promise<Sealing> {
  const recipient = await context.resolve(options.to, {
    ...(options.account !== undefined ? { account: options.account } : {}),
    acceptRotation: options.acceptRotation ?? false,
  });
  // resolve() refuses an agent without keys, so both are set here.
  const publicKey = recipient.public_key as string;
  const recipientKeyVersion = recipient.key_version as number;
  const contentKey = newContentKey();
  const encryptedKey = await wrapContentKey(contentKey, fromBase64(publicKey));
  const salts = files.map(() => new Uint8Array(randomBytes(SALT_SIZE)));
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

function outgoing(file: LocalFile, sealing: Sealing | null, index: number, options: SendOptions): Outgoing {
  const salt = sealing?.salts[index] ?? null;
  return {
    name: file.name,
    type: file.type,
    wireSize: sealing ? encryptedSize(file.size) : file.size,
    encryptionIv: salt ? toBase64(salt) : null,
    open() {
      const onBytes = (bytes: number) => options.onProgress?.({ file: file.name, bytes, total: file.size });
      if (!sealing || !salt) return sizedFileBatches(file.path, file.size, onBytes);
      // The same key and salt give the same bytes: a retried upload matches the signed list.
      return encryptedFileBatches(file.path, file.size, sealing.contentKey, salt, onBytes);
    },
  };
}

/** The fields both upload paths share, in the API's names. */
function transferFields(
  context: SendContext,
  options: SendOptions,
  mode: TransferMode,
  sealing: Sealing | null,
) {
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

type Fields = ReturnType<typeof transferFields>;

async function sendMultipart(transport: Transport, fields: Fields, files: Outgoing[]): Promise<Transfer> {
  const formFields: [string, string][] = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => [name, String(value)]);
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

async function sendPresigned(transport: Transport, fields: Fields, files: Outgoing[]): Promise<Transfer> {
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
  for (const [index, file] of files.entries()) {
    const link = created.upload_urls[index];
    if (link?.file_name !== file.name) {
      throw new HandoffError("UNEXPECTED_ANSWER", `the server gave no upload link for ${file.name}`);
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
  // The API's own confirm path on our base URL: the API key goes to no other host.
  return transport.json<Transfer>({
    method: "POST",
    url: `/v1/transfers/${encodeURIComponent(created.id)}/confirm`,
    idempotent: true,
  });
}

/**
 * Sends files (decisions 5.2–5.4): resolves and pins the recipient, wraps a fresh content key to
 * it, signs the file list, then streams each file from disk through encryption to the network.
 * An e-mail recipient is agent-to-human: plain multipart, which the server encrypts at rest.
 */
export async function send(context: SendContext, options: SendOptions): Promise<Transfer> {
  if (options.paths.length === 0) throw new HandoffError("NO_FILES", "send needs at least one file");
  const mode: TransferMode = EMAIL.test(options.to) ? "agent-to-human" : "agent-to-agent";
  const files = (await Promise.all(options.paths.map(localFiles))).flat();
  if (files.length === 0) throw new HandoffError("NO_FILES", "the folders given hold no regular file");
  if (files.length > MAX_FILES_PER_TRANSFER)
    throw new HandoffError(
      "TOO_MANY_FILES",
      `a transfer holds at most ${MAX_FILES_PER_TRANSFER} files, not ${files.length}`,
    );
  const sealing = mode === "agent-to-agent" && !options.plain ? await seal(context, options, files) : null;
  const out = files.map((file, index) => outgoing(file, sealing, index, options));
  const fields = transferFields(context, options, mode, sealing);
  const wireTotal = out.reduce((sum, file) => sum + file.wireSize, 0);
  // Presigned transfers cannot go to people: the server must see those bytes to encrypt them at rest.
  if (mode === "agent-to-agent" && wireTotal >= context.presignedThreshold) {
    return sendPresigned(context.transport, fields, out);
  }
  return sendMultipart(context.transport, fields, out);
}
