import type { Knex } from "knex";
import type { AgentRow } from "../../projections/agents.js";

export type { AgentRow };

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

/** Whether any agent, of any account, has a live webhook: when none has, no event makes a message. */
export async function anyLiveWebhook(db: Knex): Promise<boolean> {
  const row = await db("agents").where({ webhook_status: "active" }).whereNotNull("webhook_url").first("id");
  return row !== undefined;
}
