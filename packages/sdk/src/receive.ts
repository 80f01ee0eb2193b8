import { createHash, type Hash, randomBytes } from "node:crypto";
import { type FileHandle, link, lstat, mkdir, open, rename, rm, rmdir } from "node:fs/promises";
import { extname, join, resolve as resolvePath } from "node:path";
import {
  fromBase64,
  HandoffCryptoError,
  plainSizeOf,
  RecordDecryptor,
  unwrapContentKey,
  verifyTransfer,
} from "./crypto/index.js";
import { HandoffApiError, HandoffError, HandoffTransferError } from "./errors.js";
import { fileNameProblem, segmentsOf } from "./file-names.js";
import type { Transport } from "./http.js";
import type { Identity } from "./identity.js";
import { nodeAesGcm } from "./node-aes-gcm.js";
import type { Progress } from "./send.js";
import { sendingAgent } from "./sender.js";
import {
  createFileScan,
  DEFAULT_SHIELD_LEVEL,
  parseShieldLevel,
  type ShieldLevel,
  ShieldLevelError,
  type ShieldResult,
} from "./shield/index.js";
import { RECEIPT_TYPE, type Receipt } from "./transparency/index.js";
import type { DownloadAnswer, ResolvedAgent, Transfer } from "./types.js";

export interface ReceiveOptions {
  /** Where the files go; created when missing. */
  outDir: string;
  /** Shield level (decisions 5.6), default `standard`. An unknown level is refused before any download. */
  shield?: ShieldLevel;
  /** Accepts changed keys of the sender instead of refusing them (see resolve). */
  acceptRotation?: boolean;
  onProgress?: (progress: Progress) => void;
  /**
   * Sign and post a receipt once every file verified (decisions 9.5); default true. Its outcome is
   * told to `onReceipt`: a refused receipt never fails the receive.
   */
  receipt?: boolean;
  onReceipt?: (outcome: ReceiptOutcome) => void;
}

/** What became of a receipt: where the log keeps it, or why it was not recorded. */
export type ReceiptOutcome = { position: string; leaf_index: number | null } | { error: unknown };

export interface ReceivedFile {
  name: string;
  /** The absolute path written; absent when Shield blocked the file. */
  path?: string;
  /** Plaintext bytes received. */
  size: number;
  shield: ShieldResult;
}

export interface ReceiveResult {
  transfer_id: string;
  files: ReceivedFile[];
}

export interface ReceiveContext {
  transport: Transport;
  identity: Identity | null;
  resolve(agent: string, options: { account?: string; acceptRotation?: boolean }): Promise<ResolvedAgent>;
  /** Signs `receipt` as the receiving agent and posts it (decisions 9.5). */
  sendReceipt(receipt: Omit<Receipt, "recipient">): Promise<{ position: string; leaf_index: number | null }>;
}

/**
 * A name from the server used as a path in outDir (decisions 7.3): a relative path of plain
 * segments, never absolute, never climbing out; on Windows also without the characters it forbids.
 */
function checkName(name: string, transferId: string): void {
  const problem =
    fileNameProblem(name) ??
    (process.platform === "win32" && /[:<>"|?*]/.test(name) ? "it holds a character Windows forbids" : null);
  if (problem) {
    throw new HandoffTransferError(
      "UNSAFE_FILE_NAME",
      `transfer ${transferId} names a file ${JSON.stringify(name)}, which is not a safe relative path: ${problem}`,
      transferId,
    );
  }
}

/** The Shield level asked for (default `standard`), refused with UNKNOWN_SHIELD_LEVEL if unknown. */
function shieldLevel(level: string | undefined): ShieldLevel {
  try {
    return parseShieldLevel(level ?? DEFAULT_SHIELD_LEVEL);
  } catch (error) {
    if (!(error instanceof ShieldLevelError)) throw error;
    throw new HandoffError("UNKNOWN_SHIELD_LEVEL", error.message, { cause: error });
  }
}

/** Bytes gathered before one write: one system call per MiB instead of one per 64 KiB record. */
const WRITE_BATCH_BYTES = 1024 * 1024;

/** How a download is decrypted: its content key and the file's encryption_iv (the salt). */
interface Decryption {
  contentKey: Uint8Array;
  encryptionIv: string;
}

/**
 * Gathers chunks by reference (they are the stream's or the decryptor's to give away) into batches
 * of just over WRITE_BATCH_BYTES, each written with one writev, one batch in flight while the next
 * is gathered: the thread pool copies a batch into the page cache while this thread receives and
 * decrypts the next one, where they used to take turns. A batch ends with the chunk that takes it
 * past WRITE_BATCH_BYTES, not at it: decrypted records are whole 64 KiB, so batches cut at 1 MiB
 * put every write at a 1 MiB offset, and Linux (6.18, ext4) backs such writes with 1 MiB
 * page-cache folios, which on the benchmark VM cost four to five times the system time of the
 * same bytes written off that grid (1 byte, 4 KiB or 64 KiB off: fresh contiguous memory, which
 * the VM hands back to its host while free).
 */
class BatchWriter {
  private batch: Uint8Array[] = [];
  private batchBytes = 0;
  private readonly full: Uint8Array[][] = [];
  private writing: Promise<void> = Promise.resolve();

  constructor(private readonly handle: FileHandle) {}

  add(chunk: Uint8Array): void {
    this.batch.push(chunk);
    this.batchBytes += chunk.byteLength;
    if (this.batchBytes > WRITE_BATCH_BYTES) this.cut();
  }

  /** Starts writing each full batch, in order, each once the one before it is written. */
  async writeFull(): Promise<void> {
    for (let batch = this.full.shift(); batch; batch = this.full.shift()) {
      // The batch in flight first (its failure is thrown here).
      await this.writing;
      this.writing = writeAll(this.handle, batch);
      // Awaited by the next write, finish or settle; meanwhile a failure is not an unhandled rejection.
      this.writing.catch(() => {});
    }
  }

  /** Writes what is left and waits for every byte. */
  async finish(): Promise<void> {
    if (this.batchBytes > 0) this.cut();
    await this.writeFull();
    await this.writing;
  }

  /** Waits for the write in flight whatever its outcome: before the file is closed. */
  settle(): Promise<void> {
    return this.writing.catch(() => {});
  }

  private cut(): void {
    this.full.push(this.batch);
    this.batch = [];
    this.batchBytes = 0;
  }
}

/** One batch with writev, again from where a short write stopped. */
async function writeAll(handle: FileHandle, batch: Uint8Array[]): Promise<void> {
  const bytes = batch.reduce((sum, chunk) => sum + chunk.byteLength, 0);
  for (let done = 0; done < bytes; ) {
    done += (await handle.writev(done === 0 ? batch : remainder(batch, done))).bytesWritten;
  }
}

/**
 * Writes a download to a new file (never over an existing one), decrypting it on the way when
 * `decryption` is given, and hands each plaintext chunk to `observe` first; the bytes as downloaded
 * go through `stored` (a receipt names their hash). The body is iterated
 * directly and each chunk pushed through the decryptor: no stream between them, no copy of a record.
 */
async function writeNewFile(
  path: string,
  body: ReadableStream<Uint8Array>,
  decryption: Decryption | null,
  observe: (chunk: Uint8Array, written: number) => void,
  stored: Hash,
): Promise<number> {
  const handle = await open(path, "wx", 0o600);
  const writer = new BatchWriter(handle);
  let written = 0;
  const take = (chunk: Uint8Array) => {
    written += chunk.byteLength;
    observe(chunk, written);
    writer.add(chunk);
  };
  const decryptor = decryption
    ? new RecordDecryptor(decryption.contentKey, decryption.encryptionIv, take, nodeAesGcm)
    : null;
  try {
    for await (const chunk of body) {
      stored.update(chunk);
      if (decryptor) await decryptor.push(chunk);
      else take(chunk);
      await writer.writeFull();
    }
    await decryptor?.end();
    await writer.finish();
  } finally {
    await writer.settle();
    await handle.close();
  }
  return written;
}

/** What is left of `chunks` after its first `skip` bytes (after a short write). */
function remainder(chunks: Uint8Array[], skip: number): Uint8Array[] {
  const rest: Uint8Array[] = [];
  for (const chunk of chunks) {
    if (skip >= chunk.byteLength) skip -= chunk.byteLength;
    else {
      rest.push(chunk.subarray(skip));
      skip = 0;
    }
  }
  return rest;
}

/** `name`, else `name (1).ext`, `name (2).ext`…: the first that is free. */
function candidateName(name: string, attempt: number): string {
  if (attempt === 0) return name;
  const extension = extname(name);
  const stem = extension && extension !== name ? name.slice(0, -extension.length) : name;
  return `${stem} (${attempt})${extension && extension !== name ? extension : ""}`;
}

/**
 * The folder of `name` inside outDir, made one level at a time. A level that exists must be a real
 * folder: a symbolic link, a file or a device there is refused, never followed, so nothing lands
 * outside outDir. Folders it makes are added to `made` (removed again on failure).
 */
async function folderOf(outDir: string, name: string, made: string[], transferId: string): Promise<string> {
  let folder = outDir;
  for (const segment of segmentsOf(name).slice(0, -1)) {
    folder = join(folder, segment);
    try {
      await mkdir(folder);
      made.push(folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (!(await lstat(folder)).isDirectory()) {
        throw new HandoffTransferError(
          "UNSAFE_FILE_NAME",
          `transfer ${transferId} names a file under ${folder}, which exists and is not a folder (a link is never followed)`,
          transferId,
        );
      }
    }
  }
  return folder;
}

/** Moves a finished temporary file to its final name, in its folder, without replacing anything there. */
async function placeFile(temp: string, folder: string, name: string): Promise<string> {
  const leaf = segmentsOf(name).at(-1) ?? name;
  for (let attempt = 0; attempt < 1000; attempt++) {
    const target = join(folder, candidateName(leaf, attempt));
    try {
      await link(temp, target);
      await rm(temp, { force: true });
      return target;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EEXIST") continue;
      if (code === "EPERM" || code === "ENOTSUP" || code === "EOPNOTSUPP") {
        // No hard links here (some network and FAT file systems): a plain rename is the best left.
        await rename(temp, target);
        return target;
      }
      throw error;
    }
  }
  throw new HandoffError("NO_FREE_NAME", `no free file name for ${name} in ${folder}`);
}

/** The sender's keys, pinned; on a slug several connected accounts use, the one that sent it. */
async function senderKeys(
  context: ReceiveContext,
  sender: string,
  download: DownloadAnswer,
  acceptRotation: boolean,
): Promise<ResolvedAgent> {
  try {
    return await context.resolve(sender, { acceptRotation });
  } catch (error) {
    if (!(error instanceof HandoffApiError && error.code === "AMBIGUOUS_RECIPIENT")) throw error;
    const candidates = Array.isArray(error.candidates) ? (error.candidates as { account_id: string }[]) : [];
    for (const candidate of candidates) {
      const keys = await context.resolve(sender, { account: candidate.account_id, acceptRotation });
      if (keys.public_key === download.sender_public_key) return keys;
    }
    throw error;
  }
}

/** Decisions 5.4: the signature over the file list, checked before a byte of any file is fetched. */
function verifySender(transfer: Transfer, download: DownloadAnswer, sender: ResolvedAgent | null): void {
  const slug = sendingAgent(transfer) ?? "";
  const fail = (code: string, message: string) => new HandoffTransferError(code, message, transfer.id);
  const signature = download.sender_signature;
  if (sender === null) {
    if (signature !== null)
      throw fail("SIGNATURE_INVALID", `transfer ${transfer.id} is signed by a sender with no agent keys`);
    return;
  }
  if (sender.signing_public_key === null) {
    if (signature !== null) {
      throw fail(
        "SIGNATURE_INVALID",
        `sender '${slug}' has no signing key, yet transfer ${transfer.id} is signed`,
      );
    }
    // A sender without a signing key cannot sign (5.4 signs "with a signing key"): nothing to check.
    return;
  }
  if (signature === null) {
    throw fail(
      "SIGNATURE_MISSING",
      `transfer ${transfer.id} is not signed, though its sender '${slug}' has a signing key`,
    );
  }
  const files = download.files.map((file) => ({
    name: file.file_name,
    encryptionIv: file.encryption_iv ?? "",
  }));
  const valid = verifyTransfer(
    fromBase64(sender.signing_public_key),
    {
      sender: slug,
      recipient: transfer.recipient,
      recipientKeyVersion: download.recipient_key_version ?? 0,
      encryptedKey: download.encrypted_key ?? "",
      files,
    },
    signature,
  );
  if (!valid) {
    throw fail(
      "SIGNATURE_INVALID",
      `the signature of transfer ${transfer.id} does not verify against the signing key of '${slug}'`,
    );
  }
}

function requireIdentity(context: ReceiveContext): Identity {
  if (!context.identity) {
    throw new HandoffError(
      "IDENTITY_REQUIRED",
      "receiving an encrypted transfer needs the recipient's identity",
    );
  }
  return context.identity;
}

/**
 * The download must serve the files the transfer lists, in order, encrypted as it says (a
 * "plain" download of an encrypted transfer would be unauthenticated bytes), each with its IV.
 */
function checkFileList(transfer: Transfer, download: DownloadAnswer): void {
  const listed = transfer.files.map((file) => file.name);
  const served = download.files.map((file) => file.file_name);
  const missingIv = download.is_encrypted && download.files.some((file) => !file.encryption_iv);
  const sameNames = listed.length === served.length && listed.every((name, index) => name === served[index]);
  if (missingIv || !sameNames || download.is_encrypted !== transfer.is_encrypted) {
    throw new HandoffTransferError(
      "FILE_LIST_MISMATCH",
      `the files served for transfer ${transfer.id} differ from the files it lists`,
      transfer.id,
    );
  }
}

/** A crypto refusal of 5.3 as a transfer error naming the file; anything else unchanged. */
function named(error: unknown, transferId: string, fileName: string): unknown {
  if (error instanceof HandoffCryptoError) {
    return new HandoffTransferError(error.code, `${fileName}: ${error.message}`, transferId, {
      cause: error,
    });
  }
  return error;
}

interface Pending {
  temp: string;
  file: ReceivedFile;
}

/** A file's entry in a receipt: plaintext and downloaded bytes, each hashed as they went by. */
type ReceiptFile = Receipt["files"][number];

/** The worst of the files' verdicts, as one receipt names it; null when Shield was off. */
function receiptShield(level: ShieldLevel, files: ReceivedFile[]): Receipt["shield"] {
  if (level === "off") return null;
  const order = ["clean", "unscanned", "flagged", "blocked"] as const;
  const worst = files.reduce((w, f) => Math.max(w, order.indexOf(f.shield.verdict)), 0);
  return { level, verdict: order[worst] ?? "clean" };
}

/**
 * The one receiving flow: fetch the download answer, verify the sender's signature over the file
 * list, unwrap the content key, then per file download → decrypt (each record authenticated) →
 * scan → temporary file. Only when every file has passed are they renamed to their names; a
 * file Shield blocks is deleted instead. On any failure everything this call wrote is removed.
 */
export async function receive(
  context: ReceiveContext,
  transferId: string,
  options: ReceiveOptions,
): Promise<ReceiveResult> {
  const level = shieldLevel(options.shield);
  const outDir = resolvePath(options.outDir);
  const id = encodeURIComponent(transferId);
  const transfer = await context.transport.json<Transfer>({
    method: "GET",
    url: `/v1/transfers/${id}`,
    idempotent: true,
  });
  for (const file of transfer.files) checkName(file.name, transfer.id);
  const identity = transfer.is_encrypted ? requireIdentity(context) : context.identity;
  // Counts a download: not retried on a network error, which could count it twice.
  const download = await context.transport.json<DownloadAnswer>({
    method: "GET",
    url: `/v1/transfers/${id}/download`,
    idempotent: false,
  });
  for (const file of download.files) checkName(file.file_name, transfer.id);
  checkFileList(transfer, download);

  let contentKey: Uint8Array | null = null;
  if (download.is_encrypted) {
    const agent = sendingAgent(transfer);
    const sender =
      agent === null ? null : await senderKeys(context, agent, download, options.acceptRotation ?? false);
    verifySender(transfer, download, sender);
    if (!download.encrypted_key) {
      throw new HandoffTransferError(
        "FILE_LIST_MISMATCH",
        `transfer ${transfer.id} has no encrypted key`,
        transfer.id,
      );
    }
    try {
      contentKey = await unwrapContentKey(download.encrypted_key, (identity as Identity).x25519.privateKey);
    } catch (error) {
      throw named(error, transfer.id, "the content key");
    }
  }

  await mkdir(outDir, { recursive: true });
  const pending: Pending[] = [];
  const results: ReceivedFile[] = [];
  const receiptFiles: ReceiptFile[] = [];
  const placed: string[] = [];
  const madeFolders: string[] = [];
  let temp: string | null = null;
  try {
    for (const [index, served] of download.files.entries()) {
      const name = served.file_name;
      // Not named after the file: its name may already use all 255 bytes a name may have.
      temp = join(outDir, `.handoff-${randomBytes(8).toString("hex")}.part`);
      const response = await context.transport.send({
        method: "GET",
        url: served.download_url,
        idempotent: true,
      });
      const body = response.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() });
      const decryption =
        contentKey && served.encryption_iv ? { contentKey, encryptionIv: served.encryption_iv } : null;
      const total = contentKey ? plainSizeOf(served.size) : served.size;
      const scan = createFileScan(level, { name, declaredType: transfer.files[index]?.type ?? null });
      let size: number;
      const plain = createHash("sha256");
      const stored = createHash("sha256");
      try {
        size = await writeNewFile(
          temp,
          body,
          decryption,
          (chunk, written) => {
            plain.update(chunk);
            scan.observe(chunk);
            options.onProgress?.({ file: name, bytes: written, total });
          },
          stored,
        );
      } catch (error) {
        throw named(error, transfer.id, name);
      }
      receiptFiles.push({ name, size, sha256: plain.digest("hex"), stored_sha256: stored.digest("hex") });
      const shield = await scan.finish(temp);
      const file: ReceivedFile = { name, size, shield };
      results.push(file);
      if (shield.verdict === "blocked") {
        await rm(temp, { force: true });
      } else {
        pending.push({ temp, file });
      }
      temp = null;
    }
    for (const item of pending) {
      const folder = await folderOf(outDir, item.file.name, madeFolders, transfer.id);
      item.file.path = await placeFile(item.temp, folder, item.file.name);
      placed.push(item.file.path);
    }
  } catch (error) {
    const leftovers = [...(temp ? [temp] : []), ...pending.map((item) => item.temp), ...placed];
    await Promise.all(leftovers.map((path) => rm(path, { force: true })));
    for (const folder of madeFolders.reverse()) await rmdir(folder).catch(() => {});
    throw error;
  }
  if ((options.receipt ?? true) && context.identity) {
    const receipt = {
      type: RECEIPT_TYPE,
      transfer_id: transfer.id,
      sender_signature: download.sender_signature,
      files: receiptFiles,
      shield: receiptShield(level, results),
      received_at: new Date().toISOString(),
    } as const;
    const outcome = await context.sendReceipt(receipt).catch((error: unknown) => ({ error }));
    options.onReceipt?.(outcome);
  }
  return { transfer_id: transfer.id, files: results };
}
