import type { z } from "zod";
import type { AccountRow } from "../queries/accounts.js";
import type { AgentRow } from "../queries/agents.js";
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
