import { bytesOf, statusAt, type Transfer } from "../../domain/transfer.js";
import type { TransferRow } from "./transfers.js";

const iso = (value: Date | string) => new Date(value).toISOString();

/** What the Transfer of spec 2.3 is made from: a read-model row, or a transfer as just decided. */
export type TransferView = Pick<
  TransferRow,
  | "id"
  | "status"
  | "pending_reason"
  | "mode"
  | "sender"
  | "sender_email"
  | "request_id"
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
    sender_email: record.senderEmail ?? null,
    request_id: record.requestId ?? null,
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

/**
 * Who sent it as a Transfer shows it: a slug or an address, or for a request link (decisions
 * 10.3) what the person typed, marked unverified (an empty name is none).
 */
function senderOf(row: Pick<TransferView, "mode" | "sender" | "sender_email">) {
  if (row.mode !== "request") return row.sender;
  return {
    kind: "link" as const,
    name: row.sender || null,
    email: row.sender_email,
    verified: false as const,
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
    request_id: row.request_id,
    sender: senderOf(row),
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
