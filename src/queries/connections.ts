import type { Knex } from "knex";
import type { ConnectionStatus } from "../../domain/connection.js";
import { type AccountRow, findAccount } from "./accounts.js";
import { type AgentRow, isUuid } from "./agents.js";
import { accountsThatSentTo } from "./humans.js";

export interface ConnectionRow {
  id: string;
  pair: string;
  requester_account_id: string;
  invitee_account_id: string;
  status: ConnectionStatus;
  created_at: Date;
  updated_at: Date;
}

export async function findConnection(db: Knex, id: string): Promise<ConnectionRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db<ConnectionRow>("connections").where({ id }).first();
}

/** Every connection an account is a side of, newest first. */
export async function listConnections(db: Knex, accountId: string): Promise<ConnectionRow[]> {
  return db<ConnectionRow>("connections")
    .where({ requester_account_id: accountId })
    .orWhere({ invitee_account_id: accountId })
    .orderBy([{ column: "created_at", order: "desc" }, { column: "id" }]);
}

/** The accounts an account is actively connected with. */
export function pairedAccountIds(db: Knex, accountId: string): Knex.QueryBuilder {
  return db("connections")
    .where({ status: "active", requester_account_id: accountId })
    .select("invitee_account_id as account_id")
    .union((union) =>
      union
        .from("connections")
        .where({ status: "active", invitee_account_id: accountId })
        .select("requester_account_id"),
    );
}

/** Whether two accounts are actively connected. */
export async function areConnected(db: Knex, accountId: string, otherId: string): Promise<boolean> {
  const rows: { account_id: string }[] = await pairedAccountIds(db, accountId);
  return rows.some((row) => row.account_id === otherId);
}

/** An account named by e-mail (any letter case) or UUID. */
export async function findAccountByEmailOrId(db: Knex, ref: string): Promise<AccountRow | undefined> {
  if (isUuid(ref)) return findAccount(db, ref);
  return db<AccountRow>("accounts").whereRaw("lower(email) = lower(?)", [ref]).first();
}

export type AgentWithAccount = AgentRow & { account_name: string; account_email: string };

function agentsWithAccounts(db: Knex) {
  return db("agents")
    .join("accounts", "accounts.id", "agents.account_id")
    .select("agents.*", "accounts.name as account_name", "accounts.email as account_email");
}

/**
 * Spec 4.6: the connected agents a caller may send to, its own first, then those of actively
 * connected accounts; each group in registration order.
 */
export async function sendableAgents(
  db: Knex,
  accountId: string,
  personEmail: string | null = null,
): Promise<AgentWithAccount[]> {
  const own = await agentsWithAccounts(db)
    .where({ "agents.account_id": accountId, "agents.connection_status": "connected" })
    .orderBy([{ column: "agents.created_at" }, { column: "agents.id" }]);
  const paired = await agentsWithAccounts(db)
    .whereNot({ "agents.account_id": accountId })
    .where((where) => peerAccounts(db, where, accountId, personEmail))
    .where({ "agents.connection_status": "connected" })
    .orderBy([{ column: "accounts.name" }, { column: "agents.created_at" }, { column: "agents.id" }]);
  return [...own, ...paired];
}

/**
 * The accounts whose agents a caller may reach besides its own: actively connected ones and, for
 * a verified person (`personEmail`), the accounts that have sent to them (decisions 4.6).
 */
function peerAccounts(db: Knex, where: Knex.QueryBuilder, accountId: string, personEmail: string | null) {
  where.whereIn("agents.account_id", pairedAccountIds(db, accountId));
  if (personEmail) where.orWhereIn("agents.account_id", accountsThatSentTo(db, personEmail));
  return where;
}

/**
 * Agents a caller can see by slug or UUID: on its own account, an actively connected one, or (for
 * a person) one that has sent to them; never disconnected ones. Anything else stays invisible, so
 * slugs of strangers cannot be probed.
 */
export async function visibleAgents(
  db: Knex,
  accountId: string,
  ref: string,
  personEmail: string | null = null,
): Promise<AgentWithAccount[]> {
  const query = agentsWithAccounts(db)
    .whereNot({ "agents.connection_status": "disconnected" })
    .where((where) =>
      where
        .where({ "agents.account_id": accountId })
        .orWhere((peers) => peerAccounts(db, peers, accountId, personEmail)),
    );
  if (isUuid(ref)) query.where({ "agents.id": ref });
  else query.where({ "agents.agent_id": ref });
  return query.orderBy([{ column: "agents.created_at" }, { column: "agents.id" }]);
}
