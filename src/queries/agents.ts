import type { Knex } from "knex";

export interface AgentRow {
  id: string;
  account_id: string;
  agent_id: string;
  name: string | null;
  description: string | null;
  webhook_url: string | null;
  webhook_status: "active" | "disabled" | null;
  agent_type: string;
  connection_status: "pending" | "connected" | "disconnected";
  public_key: string | null;
  public_key_algorithm: string;
  signing_public_key: string | null;
  signing_key_algorithm: string;
  key_version: number | null;
  last_seen_at: Date | null;
  metadata: Record<string, unknown>;
  created_at: Date;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export async function findAgent(db: Knex, id: string): Promise<AgentRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db<AgentRow>("agents").where({ id }).first();
}

export async function listAgents(db: Knex, accountId: string): Promise<AgentRow[]> {
  return db<AgentRow>("agents")
    .where({ account_id: accountId })
    .orderBy([{ column: "created_at" }, { column: "id" }]);
}

/** The connected agent with this slug on an account, if any. */
export async function findConnectedAgentBySlug(
  db: Knex,
  accountId: string,
  slug: string,
): Promise<AgentRow | undefined> {
  return db<AgentRow>("agents")
    .where({ account_id: accountId, agent_id: slug, connection_status: "connected" })
    .first();
}

/** The account's first connected agent (oldest first): the one acting when a request names none. */
export async function firstConnectedAgent(db: Knex, accountId: string): Promise<AgentRow | undefined> {
  return db<AgentRow>("agents")
    .where({ account_id: accountId, connection_status: "connected" })
    .orderBy([{ column: "created_at" }, { column: "id" }])
    .first();
}
