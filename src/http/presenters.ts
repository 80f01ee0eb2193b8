import { ERASED } from "../../domain/personal-data.js";
import type { PlanLimits } from "../../domain/plan-limits.js";
import { bytesOf, statusAt, type Transfer, type TransferFile } from "../../domain/transfer.js";
import type { Agent } from "../contract/agents.js";
import type { AccountRow } from "../queries/accounts.js";
import type { AgentRow } from "../queries/agents.js";
import type { PersonRow } from "../queries/humans.js";
import type { TransferRow } from "../queries/transfers.js";

/** Decisions/spec 7: an address is shown to other accounts only masked, never in full. */
export function maskEmail(email: string): string {
  if (email === ERASED) return ERASED;
  const [local = "", domain = ""] = email.split("@");
  const dot = domain.lastIndexOf(".");
  const host = dot > 0 ? domain.slice(0, dot) : domain;
  const tld = dot > 0 ? domain.slice(dot) : "";
  return `${local.slice(0, 1)}***@${host.slice(0, 1)}***${tld}`;
}

const iso = (value: Date | string) => new Date(value).toISOString();
const isoOrNull = (value: Date | string | null) => (value === null ? null : iso(value));

/** The full Agent of spec 2.1; a pending agent has no public key or key version yet (decisions 3.21). */
export function presentAgent(row: AgentRow): Agent {
  return {
    id: row.id,
    agent_id: row.agent_id,
    name: row.name,
    description: row.description,
    webhook_url: row.webhook_url,
    agent_type: row.agent_type,
    connection_status: row.connection_status,
    ...(row.public_key !== null ? { public_key: row.public_key } : {}),
    public_key_algorithm: "X25519",
    signing_public_key: row.signing_public_key,
    signing_key_algorithm: "Ed25519",
    ...(row.key_version !== null ? { key_version: row.key_version } : {}),
    last_seen_at: isoOrNull(row.last_seen_at),
    metadata: row.metadata,
    created_at: iso(row.created_at),
  };
}

/**
 * The account object (decisions 2 and 4.1): `kind` always, `email_verified` on a person's account.
 * `person`: the humans row of a human account.
 */
/** A plan's limits as the startup profile and GET /v1/account show them (null: unlimited). */
export function presentPlanLimits(limits: PlanLimits) {
  return {
    transfers_per_month: limits.transfersPerMonth,
    storage_bytes: limits.storageBytes,
    max_file_size: limits.maxFileSize,
    max_agents: limits.maxAgents,
    max_connections: limits.maxConnections,
  };
}

export function presentAccount(row: AccountRow, person?: Pick<PersonRow, "email_verified"> | null) {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    plan: row.plan,
    kind: row.kind,
    ...(row.kind === "human" ? { email_verified: person?.email_verified ?? false } : {}),
    created_at: iso(row.created_at),
  };
}

/** What the Transfer of spec 2.3 is made from: a read-model row, or a transfer as just decided. */
export type TransferView = Pick<
  TransferRow,
  | "id"
  | "status"
  | "pending_reason"
  | "mode"
  | "sender"
  | "recipient"
  | "files"
  | "file_count"
  | "total_size"
  | "max_downloads"
  | "downloads"
  | "is_encrypted"
  | "auto_delete"
  | "message"
> & { created_at: Date | string; expires_at: Date | string };

/** A transfer as its decider left it, so a write answers without waiting for the read models. */
export function viewOf(transfer: Transfer): TransferView {
  const { record } = transfer;
  return {
    id: record.transferId,
    status: transfer.status,
    pending_reason: record.pendingReason,
    mode: record.mode,
    sender: record.sender,
    recipient: record.recipient,
    files: record.files,
    file_count: record.files.length,
    total_size: bytesOf(record.files),
    max_downloads: record.maxDownloads,
    downloads: transfer.downloads,
    is_encrypted: record.isEncrypted,
    auto_delete: record.autoDelete,
    message: record.message,
    created_at: record.createdAt,
    expires_at: record.expiresAt,
  };
}

/** The Transfer of spec 2.3, with the status a reader sees now (decisions 3.13). */
export function presentTransfer(row: TransferView, baseUrl: string, now: Date) {
  const expiresAt = iso(row.expires_at);
  return {
    id: row.id,
    url: `${baseUrl}/t/${row.id}`,
    api_url: `${baseUrl}/v1/transfers/${row.id}/download`,
    status: statusAt(row.status, expiresAt, now.toISOString()),
    pending_reason: row.pending_reason,
    mode: row.mode,
    sender: row.sender,
    recipient: row.recipient,
    files: row.files.map((file) => ({ name: file.name, size: file.size, type: file.type })),
    file_count: row.file_count,
    total_size: Number(row.total_size),
    max_downloads: row.max_downloads,
    downloads: row.downloads,
    is_encrypted: row.is_encrypted,
    auto_delete: row.auto_delete,
    message: row.message,
    created_at: iso(row.created_at),
    expires_at: expiresAt,
  };
}

/** The answer of a counted download (spec 4.12): one signed link per file and the key material. */
export function presentDownload(transfer: Transfer, links: { file: TransferFile; url: string }[]) {
  const { record } = transfer;
  const e = record.encryption;
  return {
    id: record.transferId,
    files: links.map(({ file, url }) => ({
      file_name: file.name,
      download_url: url,
      size: file.size,
      encryption_iv: file.encryptionIv,
    })),
    downloads: transfer.downloads,
    downloads_remaining: record.maxDownloads - transfer.downloads,
    expires_at: record.expiresAt,
    auto_delete: record.autoDelete,
    is_encrypted: record.isEncrypted,
    encrypted_key: e.encryptedKey,
    encryption_algorithm: e.algorithm,
    recipient_key_version: e.recipientKeyVersion,
    sender_signature: e.senderSignature,
    channel_id: null,
    encryption_salt: null,
    sender_public_key: e.senderPublicKey,
    recipient_public_key: e.recipientPublicKey,
  };
}
