import { ERASED } from "../../domain/personal-data.js";
import type { PlanLimits } from "../../domain/plan-limits.js";
import type { Transfer, TransferFile } from "../../domain/transfer.js";
import type { PresignedRequest } from "../blobs/port.js";
import type { Agent } from "../contract/agents.js";
import type { AccountRow } from "../queries/accounts.js";
import type { AgentRow } from "../queries/agents.js";
import type { PersonRow } from "../queries/humans.js";

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

// The Transfer of spec 2.3 lives with the read side: the webhook messages carry it too (decisions 8.2).
export { presentTransfer, type TransferView, viewOf } from "../queries/transfer-view.js";

const isoOrNull = (value: Date | string | null) => (value === null ? null : iso(value));

/**
 * The Agent of spec 2.1 but for its key proof, which the log gives (decisions 9.6); a pending agent
 * has no public key or key version yet (decisions 3.21).
 */
export function presentAgent(row: AgentRow): Omit<Agent, "key_proof"> {
  return {
    id: row.id,
    agent_id: row.agent_id,
    name: row.name,
    description: row.description,
    webhook_url: row.webhook_url,
    webhook_status: row.webhook_status,
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

/** The upload links of a presigned transfer (decisions 3.16, 7.1), one per file in order. */
export function presentUploadLinks(uploads: { file: TransferFile; link: PresignedRequest }[]) {
  return uploads.map(({ file, link }) => ({
    file_id: file.fileId,
    file_name: file.name,
    upload_url: link.url,
    resumable_url: link.resumableUrl,
    method: link.method,
    headers: link.headers,
  }));
}
