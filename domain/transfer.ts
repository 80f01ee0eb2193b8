import { type Decider, type Decision, DomainError, refuse, unreachable } from "./decider.js";
import { overMaxFileSize, type PlanLimits } from "./plan-limits.js";

/** `request`: sent through a request link (decisions 10) by someone without an account. */
export const TRANSFER_MODES = ["agent-to-agent", "agent-to-human", "human-to-agent", "request"] as const;
export type TransferMode = (typeof TRANSFER_MODES)[number];

export type TransferStatus =
  | "pending"
  | "pending_recipient"
  | "active"
  | "downloaded"
  | "expired"
  | "deleted";

export interface TransferFile {
  fileId: string;
  name: string;
  size: number;
  type: string;
  encryptionIv: string | null;
  /**
   * Lowercase hex SHA-256 of the bytes stored, once they all are: what a recipient's receipt must
   * name (decisions 9.5). Absent on files stored before receipts existed, and until a presigned
   * upload is confirmed.
   */
  storedSha256?: string;
}

/** Opaque client-side encryption material (decisions 3.20): stored and handed back, never used. */
export interface TransferEncryption {
  encryptedKey: string | null;
  algorithm: string | null;
  senderSignature: string | null;
  recipientKeyVersion: number | null;
  senderPublicKey: string | null;
  recipientPublicKey: string | null;
}

export interface TransferParties {
  mode: TransferMode;
  /** An agent's slug; for a human sender (human-to-agent) the e-mail address, sealed under `senderPersonId`'s key. */
  sender: string;
  /** The person whose sealed address `sender` holds (decisions 6.5); null for agents. */
  senderPersonId: string | null;
  senderAccountId: string;
  senderAgentId: string | null;
  /** An agent's slug; for a human recipient the e-mail address, sealed under `recipientPersonId`'s key. */
  recipient: string;
  /** The person whose sealed address `recipient` holds (decisions 6.5); null for agents. */
  recipientPersonId: string | null;
  /** Null for a human recipient without an account. */
  recipientAccountId: string | null;
  recipientAgentId: string | null;
  /** Mode `request`: the link it came through (decisions 10.3). */
  requestId?: string | null;
  /**
   * Mode `request`: the e-mail address the sender typed (unverified), sealed like `sender` (which
   * then holds the name they typed) under `senderPersonId`'s key; null when they gave none.
   */
  senderEmail?: string | null;
}

/** A human recipient of an agent-to-human transfer, as far as the service knows them. */
export interface HumanRecipient {
  registered: boolean;
  hasReceivingKey: boolean;
}

/** The content key wrapped to a person's receiving key (decisions 5.2), with the key it was wrapped to. */
export interface WrappedForPerson {
  recipientAccountId: string;
  encryptedKey: string;
  recipientKeyVersion: number;
  recipientPublicKey: string;
}

/** Why a transfer waits for its human recipient (spec 4.9's encryption rules). */
export type PendingReason = "recipient_not_registered" | "recipient_has_no_receiving_key";

/**
 * File data the server encrypted as it streamed in, for a person. `HOE1`: the format of decisions
 * 5.3 under a fresh content key K, each file's salt its `encryptionIv`; while the person has no
 * receiving key, K is held sealed under the server key outside the log (held_content_keys), so
 * that activation wraps K (5.2) and destroys the held copy without rewriting a file byte.
 * `wrappedDataKey`: transfers recorded before that, whose files are HOF1 records under a data key
 * sealed in this event; activation rewrites their files once into HOE1 (LegacyAtRest).
 */
export type AtRestEncryption = { format: "HOE1" } | LegacyAtRest;
export interface LegacyAtRest {
  wrappedDataKey: string;
}

export const isLegacyAtRest = (atRest: AtRestEncryption | null): atRest is LegacyAtRest =>
  atRest !== null && "wrappedDataKey" in atRest;

export interface TransferTerms {
  maxDownloads: number;
  autoDelete: boolean;
  isEncrypted: boolean;
  message: string | null;
  metadata: Record<string, unknown>;
  expiresAt: string;
}

export type TransferEvent =
  | {
      type: "TransferCreated";
      data: TransferParties &
        TransferTerms & {
          transferId: string;
          status: "pending" | "pending_recipient" | "active";
          pendingReason: PendingReason | null;
          atRest: AtRestEncryption | null;
          files: TransferFile[];
          encryption: TransferEncryption;
          createdAt: string;
        };
    }
  /** `storedSha256`: a presigned upload's stored files' hashes by file id, read back at its confirm. */
  | { type: "TransferActivated"; data: { activatedAt: string; storedSha256?: Record<string, string> } }
  /**
   * A held transfer's content key wrapped to its person's receiving key; `fileIvs`: the new salts
   * of files rewritten from the legacy format, by file id (null when no byte was rewritten).
   */
  | {
      type: "ContentKeyWrapped";
      data: WrappedForPerson & {
        algorithm: "AES-256-GCM";
        fileIvs: Record<string, string> | null;
        at: string;
      };
    }
  /** The server-sealed copy of the content key is gone: only the person can open the files now. */
  | { type: "HeldContentKeyDestroyed"; data: { at: string } }
  | { type: "DownloadRecorded"; data: { downloads: number; downloaderAgentId: string | null; at: string } }
  | { type: "TransferDownloaded"; data: { at: string; purgeAfter: string | null } }
  | { type: "TransferExpired"; data: { at: string } }
  | { type: "TransferDeleted"; data: { at: string } }
  | { type: "TransferFilesDeleted"; data: { at: string } }
  /** Decisions 9.5: the recipient's signed receipt, as posted, after the service checked it. */
  | { type: "ReceiptRecorded"; data: { receipt: Record<string, unknown>; signature: string; at: string } };

/** What the decider checks of a receipt; the signature itself is checked by the caller, with the agent's key. */
export interface ReceiptClaim {
  transferId: string;
  recipient: string;
  files: { name: string; storedSha256: string }[];
}

/** Who asks: the account (and the agent acting, when one is named) behind a command. */
export interface Party {
  accountId: string;
  agentId: string | null;
}

export type TransferCommand =
  | {
      type: "CreateTransfer";
      transferId: string;
      presigned: boolean;
      parties: TransferParties;
      /** Present for agent-to-human transfers. */
      human: HumanRecipient | null;
      atRest: AtRestEncryption | null;
      terms: TransferTerms;
      files: TransferFile[];
      encryption: TransferEncryption;
      now: string;
    }
  /** `uploaded`: the stored size of each file id, null when missing (looked up by the caller). */
  | {
      type: "ConfirmUpload";
      by: Party;
      uploaded: Record<string, number | null>;
      /** SHA-256 (hex) of each stored file, by file id. */
      storedSha256: Record<string, string>;
      now: string;
    }
  | {
      type: "RecordReceipt";
      by: Party;
      claim: ReceiptClaim;
      /** Whether the receipt's signature verified against the recipient's current signing key. */
      signatureValid: boolean;
      posted: { receipt: Record<string, unknown>; signature: string };
      now: string;
    }
  /** `linkLifetimeMs`: how long the download links handed out stay valid; data outlives them. */
  | { type: "RecordDownload"; by: Party; linkLifetimeMs: number; now: string }
  /** Activation for a person (decisions 4.5): their receiving key is set. */
  | {
      type: "WrapForRecipient";
      wrapped: WrappedForPerson;
      fileIvs: Record<string, string> | null;
      now: string;
    }
  | { type: "ExpireTransfer"; now: string }
  | { type: "DeleteTransfer"; by: Party; now: string }
  | { type: "MarkFilesDeleted"; now: string };

/** What a transfer was created with: the data of its TransferCreated event. */
export type TransferRecord = Extract<TransferEvent, { type: "TransferCreated" }>["data"];

/** A transfer that exists, in any status. */
export interface Transfer {
  status: TransferStatus;
  record: TransferRecord;
  downloads: number;
  filesDeleted: boolean;
}

export type TransferState = { status: "none" } | Transfer;

/** The plan of the sending account: file sizes and retention are decided against it. */
export interface TransferContext {
  limits: PlanLimits;
}

/** States that end by time: past `expires_at` each of them reads as expired. */
export const EXPIRING_STATUSES: TransferStatus[] = ["pending", "pending_recipient", "active", "downloaded"];

/**
 * A transfer's status at `now`: the one rule of time, which the decider, the presenters, the file
 * links and the mail use, and the queries and the housekeeper through its SQL form (decisions 3.13). From `expires_at`
 * on, a transfer stored as pending, held, active or downloaded is expired, whether or not its
 * expiry has been recorded yet. Its SQL form, for queries that select by status, is
 * src/queries/transfer-status.ts (tested against this function on the boundary).
 */
export function statusAt(status: TransferStatus, expiresAt: string, now: string): TransferStatus {
  return EXPIRING_STATUSES.includes(status) && Date.parse(now) >= Date.parse(expiresAt) ? "expired" : status;
}

/** Whether a transfer's status at `now` is expired (statusAt). */
export function expiredAt(
  transfer: Pick<Transfer, "status"> & { record: Pick<TransferRecord, "expiresAt"> },
  now: string,
): boolean {
  return statusAt(transfer.status, transfer.record.expiresAt, now) === "expired";
}

/** Why a transfer takes no more downloads (410 GONE): used up, or expired, and since when. */
function goneReason(transfer: Transfer): string {
  const { maxDownloads, expiresAt } = transfer.record;
  return transfer.status === "downloaded"
    ? `this transfer is used up: its ${maxDownloads} allowed download${maxDownloads === 1 ? " was" : "s were"} made`
    : `this transfer expired at ${expiresAt}`;
}

/** Bytes a transfer holds: the declared sizes of its files. */
export function bytesOf(files: TransferFile[]): number {
  return files.reduce((sum, file) => sum + file.size, 0);
}

/**
 * Whether a transfer's bytes count against its sender's storage quota (decisions 3.14): from its
 * creation until it expires, is deleted, or is downloaded out with `auto_delete`.
 */
export function holdsStorage(transfer: Transfer): boolean {
  switch (transfer.status) {
    case "pending":
    case "pending_recipient":
    case "active":
      return true;
    case "downloaded":
      return !transfer.record.autoDelete;
    case "expired":
    case "deleted":
      return false;
    default:
      return unreachable(transfer.status);
  }
}

/**
 * Whether a transfer takes file bytes at `now` (decisions 3.16, 7.1): only while it is pending, a
 * presigned transfer not yet confirmed, deleted or expired. Every upload path (the signed PUT, the
 * tus resource) asks before it reads a byte and again once the bytes are in: bytes that arrive
 * after the transfer closed are deleted, so no file outlives its transfer.
 */
export function takesUploads(state: TransferState, now: string): boolean {
  return state.status !== "none" && statusAt(state.status, state.record.expiresAt, now) === "pending";
}

/** Statuses whose files a download link serves: the last counted download's links included. */
const SERVING_STATUSES: TransferStatus[] = ["active", "downloaded"];

/**
 * Whether a transfer's files may be served at `now` through a signed link: active, or downloaded
 * out (the last download's links serve until they expire), its files not yet deleted. A deletion
 * or an expiry stops every link at once, before any clean-up has run (docs/security.md).
 */
export function servesFiles(state: TransferState, now: string): boolean {
  return (
    state.status !== "none" &&
    !state.filesDeleted &&
    SERVING_STATUSES.includes(statusAt(state.status, state.record.expiresAt, now))
  );
}

/**
 * Spec 4.9 and decisions 3.20: a transfer the client encrypted carries the content key it was
 * encrypted under (`encrypted_key`), whichever way its files come (multipart or presigned). One the
 * server encrypts at rest (`atRest`) has its key from the server, wrapped now or once the person
 * has a receiving key.
 */
export function encryptionProblem(
  terms: Pick<TransferTerms, "isEncrypted">,
  encryption: Pick<TransferEncryption, "encryptedKey">,
  atRest: AtRestEncryption | null,
): DomainError | null {
  return terms.isEncrypted && atRest === null && !encryption.encryptedKey
    ? refuse("INVALID", "encrypted_key is required when is_encrypted is true", "encrypted_key")
    : null;
}

function isParty(transfer: Transfer, accountId: string): boolean {
  return transfer.record.senderAccountId === accountId || transfer.record.recipientAccountId === accountId;
}

type CommandOf<Type extends TransferCommand["type"]> = Extract<TransferCommand, { type: Type }>;

const noSuchTransfer = () => refuse("NOT_FOUND", "no such transfer");

/** The transfer a command acts on; a deleted one is gone for every command but the file clean-up. */
function undeleted(state: TransferState): Transfer | DomainError {
  return state.status === "none" || state.status === "deleted" ? noSuchTransfer() : state;
}

function createTransfer(
  command: CommandOf<"CreateTransfer">,
  state: TransferState,
  context: TransferContext | undefined,
): Decision<TransferEvent> {
  if (state.status !== "none") return refuse("CONFLICT", "this transfer already exists");
  if (!context) throw new Error("CreateTransfer is decided against the sender's plan: pass its limits");
  const { limits } = context;
  const { transferId, presigned, parties, human, atRest, terms, files, encryption, now } = command;
  if (files.length === 0) return refuse("INVALID", "at least one file is required", "files");
  const { maxFileSize } = limits;
  const tooLarge = files.find((file) => maxFileSize !== null && file.size > maxFileSize);
  if (tooLarge && maxFileSize !== null) {
    return refuse("FILE_TOO_LARGE", overMaxFileSize(tooLarge.name, { ...limits, maxFileSize }));
  }
  const retentionMs = Date.parse(terms.expiresAt) - Date.parse(now);
  if (limits.maxRetentionSeconds !== null && retentionMs > limits.maxRetentionSeconds * 1000) {
    return refuse(
      "INVALID",
      `expires_in is beyond the plan's retention of ${limits.maxRetentionSeconds / 3600} hours`,
      "expires_in",
    );
  }
  const unencrypted = encryptionProblem(terms, encryption, atRest);
  if (unencrypted) return unencrypted;
  const pendingReason: PendingReason | null =
    human === null || human.hasReceivingKey
      ? null
      : human.registered
        ? "recipient_has_no_receiving_key"
        : "recipient_not_registered";
  if (pendingReason && !atRest) {
    return refuse("CONFLICT", "a transfer held for its recipient must be encrypted at rest by the server");
  }
  return [
    {
      type: "TransferCreated",
      data: {
        transferId,
        status: pendingReason ? "pending_recipient" : presigned ? "pending" : "active",
        pendingReason,
        atRest,
        ...parties,
        ...terms,
        files,
        encryption,
        createdAt: now,
      },
    },
  ];
}

function confirmUpload(command: CommandOf<"ConfirmUpload">, state: TransferState): Decision<TransferEvent> {
  const transfer = undeleted(state);
  if (transfer instanceof DomainError) return transfer;
  // Decisions 3.12: only the sending account confirms, and others cannot tell the transfer exists.
  if (command.by.accountId !== transfer.record.senderAccountId) return noSuchTransfer();
  if (expiredAt(transfer, command.now)) return refuse("GONE", "this transfer has expired");
  if (transfer.status === "active") return [];
  if (transfer.status !== "pending") return refuse("GONE", "this transfer has expired");
  const missing = transfer.record.files.filter((file) => command.uploaded[file.fileId] !== file.size);
  if (missing.length > 0) {
    return refuse(
      "FILES_MISSING",
      `not uploaded with their declared size: ${missing.map((file) => file.name).join(", ")}`,
    );
  }
  return [
    { type: "TransferActivated", data: { activatedAt: command.now, storedSha256: command.storedSha256 } },
  ];
}

function recordDownload(command: CommandOf<"RecordDownload">, state: TransferState): Decision<TransferEvent> {
  const transfer = undeleted(state);
  if (transfer instanceof DomainError) return transfer;
  const { by, now } = command;
  const { record } = transfer;
  if (!isParty(transfer, by.accountId)) return noSuchTransfer();
  if (record.recipientAccountId !== by.accountId) {
    return refuse("FORBIDDEN", "only the recipient side may download a transfer");
  }
  if (by.agentId && record.recipientAgentId && by.agentId !== record.recipientAgentId) {
    return refuse("FORBIDDEN", "this transfer is addressed to another agent");
  }
  const expired = expiredAt(transfer, now);
  if ((transfer.status === "pending" || transfer.status === "pending_recipient") && !expired) {
    return refuse("TRANSFER_PENDING", "this transfer is not ready for download yet");
  }
  if (transfer.status !== "active" || expired) return refuse("GONE", goneReason(transfer));
  const downloads = transfer.downloads + 1;
  const recorded: TransferEvent = {
    type: "DownloadRecorded",
    data: { downloads, downloaderAgentId: by.agentId ?? record.recipientAgentId, at: now },
  };
  if (downloads < record.maxDownloads) return [recorded];
  const purgeAfter = record.autoDelete
    ? new Date(Date.parse(now) + command.linkLifetimeMs).toISOString()
    : null;
  return [recorded, { type: "TransferDownloaded", data: { at: now, purgeAfter } }];
}

/**
 * Decisions 9.5: a receipt is the recipient agent's, for this transfer, after a download, signed by
 * the agent's current key, and names for each file it lists the bytes the service stored. Another
 * account's agent is FORBIDDEN; any other mismatch RECEIPT_INVALID, with nothing recorded.
 */
function recordReceipt(command: CommandOf<"RecordReceipt">, state: TransferState): Decision<TransferEvent> {
  const transfer = undeleted(state);
  if (transfer instanceof DomainError) return transfer;
  const { by, claim } = command;
  const { record } = transfer;
  if (by.accountId !== record.recipientAccountId) {
    return refuse("FORBIDDEN", "only the recipient agent may post a receipt for this transfer");
  }
  const invalid = (why: string) => refuse("RECEIPT_INVALID", why, "receipt");
  if (!record.recipientAgentId || by.agentId !== record.recipientAgentId || claim.recipient !== by.agentId) {
    return invalid("the receipt must be posted by, and name, the transfer's recipient agent");
  }
  if (claim.transferId !== record.transferId) return invalid("the receipt names another transfer");
  if (transfer.downloads === 0) return invalid("nothing of this transfer has been downloaded yet");
  if (!command.signatureValid)
    return invalid("the signature does not verify with the recipient's signing key");
  if (claim.files.length === 0) return invalid("the receipt names no file");
  for (const file of claim.files) {
    const stored = record.files.find((candidate) => candidate.name === file.name);
    if (!stored) return invalid(`the transfer has no file '${file.name}'`);
    if (!stored.storedSha256 || stored.storedSha256 !== file.storedSha256) {
      return invalid(`stored_sha256 of '${file.name}' is not the hash of the bytes the service stored`);
    }
  }
  return [{ type: "ReceiptRecorded", data: { ...command.posted, at: command.now } }];
}

function wrapForRecipient(
  command: CommandOf<"WrapForRecipient">,
  state: TransferState,
): Decision<TransferEvent> {
  const transfer = undeleted(state);
  if (transfer instanceof DomainError) return transfer;
  const { wrapped, fileIvs, now } = command;
  if (transfer.status === "active" && transfer.record.recipientAccountId === wrapped.recipientAccountId) {
    return [];
  }
  if (transfer.status !== "pending_recipient" || transfer.record.atRest === null) {
    return refuse("CONFLICT", "this transfer is not held for a person");
  }
  if (expiredAt(transfer, now)) return refuse("GONE", "this transfer has expired");
  return [
    { type: "ContentKeyWrapped", data: { ...wrapped, algorithm: "AES-256-GCM", fileIvs, at: now } },
    { type: "TransferActivated", data: { activatedAt: now } },
    { type: "HeldContentKeyDestroyed", data: { at: now } },
  ];
}

function expireTransfer(command: CommandOf<"ExpireTransfer">, state: TransferState): Decision<TransferEvent> {
  const transfer = undeleted(state);
  if (transfer instanceof DomainError) return transfer;
  if (transfer.status === "expired" || !expiredAt(transfer, command.now)) return [];
  return [{ type: "TransferExpired", data: { at: command.now } }];
}

function deleteTransfer(command: CommandOf<"DeleteTransfer">, state: TransferState): Decision<TransferEvent> {
  const transfer = undeleted(state);
  if (transfer instanceof DomainError) return transfer;
  if (!isParty(transfer, command.by.accountId)) return noSuchTransfer();
  return [{ type: "TransferDeleted", data: { at: command.now } }];
}

/** The clean-up of a transfer's file data: also after its deletion, and only once. */
function markFilesDeleted(
  command: CommandOf<"MarkFilesDeleted">,
  state: TransferState,
): Decision<TransferEvent> {
  if (state.status === "none") return noSuchTransfer();
  if (state.filesDeleted) return [];
  return [{ type: "TransferFilesDeleted", data: { at: command.now } }];
}

function decide(
  command: TransferCommand,
  state: TransferState,
  context: TransferContext | undefined,
): Decision<TransferEvent> {
  switch (command.type) {
    case "CreateTransfer":
      return createTransfer(command, state, context);
    case "ConfirmUpload":
      return confirmUpload(command, state);
    case "RecordReceipt":
      return recordReceipt(command, state);
    case "RecordDownload":
      return recordDownload(command, state);
    case "WrapForRecipient":
      return wrapForRecipient(command, state);
    case "ExpireTransfer":
      return expireTransfer(command, state);
    case "DeleteTransfer":
      return deleteTransfer(command, state);
    case "MarkFilesDeleted":
      return markFilesDeleted(command, state);
    default:
      return unreachable(command);
  }
}

function evolve(state: TransferState, event: TransferEvent): TransferState {
  if (event.type === "TransferCreated") {
    return {
      status: event.data.status,
      record: event.data,
      downloads: 0,
      filesDeleted: false,
    };
  }
  if (state.status === "none") return state;
  switch (event.type) {
    case "TransferActivated": {
      const hashes = event.data.storedSha256;
      if (!hashes) return { ...state, status: "active" };
      const files = state.record.files.map((file) => {
        const storedSha256 = hashes[file.fileId];
        return storedSha256 ? { ...file, storedSha256 } : file;
      });
      return { ...state, status: "active", record: { ...state.record, files } };
    }
    case "ReceiptRecorded":
      return state;
    case "ContentKeyWrapped":
      return { ...state, record: withWrappedKey(state.record, event.data) };
    case "HeldContentKeyDestroyed":
      return state;
    case "DownloadRecorded":
      return { ...state, downloads: event.data.downloads };
    case "TransferDownloaded":
      return { ...state, status: "downloaded" };
    case "TransferExpired":
      return { ...state, status: "expired" };
    case "TransferDeleted":
      return { ...state, status: "deleted" };
    case "TransferFilesDeleted":
      return { ...state, filesDeleted: true };
    default:
      return unreachable(event);
  }
}

/** A held transfer's record once its key is wrapped to its person: theirs, encrypted, no longer pending. */
export function withWrappedKey(
  record: TransferRecord,
  wrapped: Extract<TransferEvent, { type: "ContentKeyWrapped" }>["data"],
): TransferRecord {
  const { fileIvs } = wrapped;
  return {
    ...record,
    recipientAccountId: wrapped.recipientAccountId,
    pendingReason: null,
    isEncrypted: true,
    files: fileIvs
      ? record.files.map((file) => ({ ...file, encryptionIv: fileIvs[file.fileId] ?? file.encryptionIv }))
      : record.files,
    encryption: {
      ...record.encryption,
      encryptedKey: wrapped.encryptedKey,
      algorithm: wrapped.algorithm,
      recipientKeyVersion: wrapped.recipientKeyVersion,
      recipientPublicKey: wrapped.recipientPublicKey,
    },
  };
}

export const transferDecider: Decider<
  TransferCommand,
  TransferEvent,
  TransferState,
  TransferContext | undefined
> = {
  initialState: () => ({ status: "none" }),
  evolve,
  decide,
};

/**
 * True when a state change just freed the storage this transfer held (expiry, deletion, downloaded
 * out): its sender's books release it (domain/storage-quota.ts).
 */
export function releasesStorage(before: TransferState, events: TransferEvent[]): boolean {
  const after = events.reduce(evolve, before);
  return before.status !== "none" && holdsStorage(before) && after.status !== "none" && !holdsStorage(after);
}
