import type { z } from "zod";
import { statusAt } from "../../domain/transfer.js";
import type { AccountRow } from "../queries/accounts.js";
import type { AgentRow } from "../queries/agents.js";
import type { TransferRow } from "../queries/transfers.js";
import type { agentSchema } from "./schemas.js";

const iso = (value: Date | string) => new Date(value).toISOString();
const isoOrNull = (value: Date | string | null) => (value === null ? null : iso(value));

/** The full Agent of spec 2.1; a pending agent has no public key or key version yet (decisions 3.21). */
export function presentAgent(row: AgentRow): z.infer<typeof agentSchema> {
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

export function presentAccount(row: AccountRow) {
  return { id: row.id, email: row.email, name: row.name, plan: row.plan, created_at: iso(row.created_at) };
}

/** The Transfer of spec 2.3, with the status a reader sees now (decisions 3.13). */
export function presentTransfer(row: TransferRow, baseUrl: string, now: Date) {
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
