import { type Decider, type Decision, refuse, unreachable } from "./decider.js";

export const TRANSFER_MODES = ["agent-to-agent", "agent-to-human", "human-to-agent"] as const;
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
  sender: string;
  senderAccountId: string;
  senderAgentId: string | null;
  recipient: string;
  /** Null for a human recipient without an account. */
  recipientAccountId: string | null;
  recipientAgentId: string | null;
}

/** A human recipient of an agent-to-human transfer, as far as the service knows them. */
export interface HumanRecipient {
  registered: boolean;
  hasReceivingKey: boolean;
}

/** Why a transfer waits for its human recipient (spec 4.9's encryption rules). */
export type PendingReason = "recipient_not_registered" | "recipient_has_no_receiving_key";

/** File data encrypted at rest under a data key that only the server-key-wrapped copy unlocks. */
export interface AtRestEncryption {
  wrappedDataKey: string;
}

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
  | { type: "TransferActivated"; data: { activatedAt: string } }
  | { type: "DownloadRecorded"; data: { downloads: number; downloaderAgentId: string | null; at: string } }
  | { type: "TransferDownloaded"; data: { at: string; purgeAfter: string | null } }
  | { type: "TransferExpired"; data: { at: string } }
  | { type: "TransferDeleted"; data: { at: string } }
  | { type: "TransferFilesDeleted"; data: { at: string } };

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
  | { type: "ConfirmUpload"; uploaded: Record<string, number | null>; now: string }
  /** `linkLifetimeMs`: how long the download links handed out stay valid; data outlives them. */
  | { type: "RecordDownload"; downloaderAgentId: string | null; linkLifetimeMs: number; now: string }
  | { type: "ExpireTransfer"; now: string }
  | { type: "DeleteTransfer"; now: string }
  | { type: "MarkFilesDeleted"; now: string };

export interface TransferState {
  exists: boolean;
  senderAccountId: string;
  status: TransferStatus;
  files: TransferFile[];
  maxDownloads: number;
  downloads: number;
  autoDelete: boolean;
  expiresAt: string;
  filesDeleted: boolean;
  /** Bytes this transfer holds against its sender's storage quota. */
  holdsStorage: boolean;
}

/** States that end by time: past `expires_at` each of them reads as expired. */
export const EXPIRING_STATUSES: TransferStatus[] = ["pending", "pending_recipient", "active", "downloaded"];

function expired(state: TransferState, now: string): boolean {
  return Date.parse(now) >= Date.parse(state.expiresAt);
}

/** The status a reader sees at `now`: past `expires_at` it is expired, swept or not (decisions 3.13). */
export function statusAt(status: TransferStatus, expiresAt: string, now: string): TransferStatus {
  return EXPIRING_STATUSES.includes(status) && Date.parse(now) >= Date.parse(expiresAt) ? "expired" : status;
}

function decide(command: TransferCommand, state: TransferState): Decision<TransferEvent> {
  if (command.type === "CreateTransfer") {
    if (state.exists) return refuse("CONFLICT", "this transfer already exists");
    const { transferId, presigned, parties, human, atRest, terms, files, encryption, now } = command;
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
  if (!state.exists) return refuse("NOT_FOUND", "no such transfer");
  if (command.type === "MarkFilesDeleted") {
    if (state.filesDeleted) return [];
    return [{ type: "TransferFilesDeleted", data: { at: command.now } }];
  }
  if (state.status === "deleted") return refuse("NOT_FOUND", "no such transfer");
  switch (command.type) {
    case "ConfirmUpload": {
      if (expired(state, command.now)) return refuse("GONE", "this transfer has expired");
      if (state.status === "active") return [];
      if (state.status !== "pending") {
        return refuse("GONE", "this transfer has expired");
      }
      const missing = state.files.filter((file) => command.uploaded[file.fileId] !== file.size);
      if (missing.length > 0) {
        return refuse(
          "FILES_MISSING",
          `not uploaded with their declared size: ${missing.map((file) => file.name).join(", ")}`,
        );
      }
      return [{ type: "TransferActivated", data: { activatedAt: command.now } }];
    }
    case "RecordDownload": {
      if (
        (state.status === "pending" || state.status === "pending_recipient") &&
        !expired(state, command.now)
      ) {
        return refuse("TRANSFER_PENDING", "this transfer is not ready for download yet");
      }
      if (state.status !== "active" || expired(state, command.now)) {
        return refuse("GONE", "this transfer has expired or reached its download limit");
      }
      const downloads = state.downloads + 1;
      const recorded: TransferEvent = {
        type: "DownloadRecorded",
        data: { downloads, downloaderAgentId: command.downloaderAgentId, at: command.now },
      };
      if (downloads < state.maxDownloads) return [recorded];
      const purgeAfter = state.autoDelete
        ? new Date(Date.parse(command.now) + command.linkLifetimeMs).toISOString()
        : null;
      return [recorded, { type: "TransferDownloaded", data: { at: command.now, purgeAfter } }];
    }
    case "ExpireTransfer":
      if (state.status === "expired" || !expired(state, command.now)) return [];
      return [{ type: "TransferExpired", data: { at: command.now } }];
    case "DeleteTransfer":
      return [{ type: "TransferDeleted", data: { at: command.now } }];
    default:
      return unreachable(command);
  }
}

function evolve(state: TransferState, event: TransferEvent): TransferState {
  switch (event.type) {
    case "TransferCreated":
      return {
        exists: true,
        senderAccountId: event.data.senderAccountId,
        status: event.data.status,
        files: event.data.files,
        maxDownloads: event.data.maxDownloads,
        downloads: 0,
        autoDelete: event.data.autoDelete,
        expiresAt: event.data.expiresAt,
        filesDeleted: false,
        holdsStorage: true,
      };
    case "TransferActivated":
      return { ...state, status: "active" };
    case "DownloadRecorded":
      return { ...state, downloads: event.data.downloads };
    case "TransferDownloaded":
      return { ...state, status: "downloaded", holdsStorage: state.holdsStorage && !state.autoDelete };
    case "TransferExpired":
      return { ...state, status: "expired", holdsStorage: false };
    case "TransferDeleted":
      return { ...state, status: "deleted", holdsStorage: false };
    case "TransferFilesDeleted":
      return { ...state, filesDeleted: true };
    default:
      return unreachable(event);
  }
}

export const transferDecider: Decider<TransferCommand, TransferEvent, TransferState> = {
  initialState: () => ({
    exists: false,
    senderAccountId: "",
    status: "pending",
    files: [],
    maxDownloads: 0,
    downloads: 0,
    autoDelete: false,
    expiresAt: "",
    filesDeleted: false,
    holdsStorage: false,
  }),
  evolve,
  decide: (command, state) => decide(command, state),
};

/** True when a state change just freed the storage this transfer held (expiry, deletion, downloaded out). */
export function releasesStorage(before: TransferState, events: TransferEvent[]): boolean {
  return before.holdsStorage && !events.reduce(evolve, before).holdsStorage;
}
