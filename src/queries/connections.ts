import type { Knex } from "knex";
import type { ConnectionRow } from "../../projections/connections.js";
import type { PersonalData } from "../privacy/personal-data.js";
import { revealRows } from "../privacy/reveal.js";
import { type AccountRow, findAccount, findAccountByEmail } from "./accounts.js";
import { type AgentRow, isUuid } from "./agents.js";
import { accountsThatSentTo } from "./humans.js";

export type { ConnectionRow };

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

/** A live account named by e-mail (any letter case) or UUID. */
export async function findAccountByEmailOrId(
  db: Knex,
  people: PersonalData,
  ref: string,
): Promise<AccountRow | undefined> {
  if (!isUuid(ref)) return findAccountByEmail(db, people, ref);
  const account = await findAccount(db, people, ref);
  return account?.erased_at ? undefined : account;
}

export type AgentWithAccount = AgentRow & { account_name: string; account_email: string };

function agentsWithAccounts(db: Knex) {
  return db("agents")
    .join("accounts", "accounts.id", "agents.account_id")
    .select("agents.*", "accounts.name as account_name", "accounts.email as account_email");
}

/** Agents with their accounts' names and addresses as shown (opened, or "[erased]"). */
function revealAccounts(people: PersonalData, rows: AgentWithAccount[]): Promise<AgentWithAccount[]> {
  return revealRows(people, rows, ["account_name", "account_email"]);
}

/**
 * Spec 4.6: the connected agents a caller may send to, its own first, then those of actively
 * connected accounts by account name; each group in registration order. Names are sealed in the
 * read model, so the paired group is ordered once they are opened.
 */
export async function sendableAgents(
  db: Knex,
  people: PersonalData,
  accountId: string,
  personEmail: string | null = null,
): Promise<AgentWithAccount[]> {
  const own = await agentsWithAccounts(db)
    .where({ "agents.account_id": accountId, "agents.connection_status": "connected" })
    .orderBy([{ column: "agents.created_at" }, { column: "agents.id" }]);
  const paired = await agentsWithAccounts(db)
    .whereNot({ "agents.account_id": accountId })
    .where(await peerAccounts(db, people, accountId, personEmail))
    .where({ "agents.connection_status": "connected" })
    .orderBy([{ column: "agents.created_at" }, { column: "agents.id" }]);
  const byName = (await revealAccounts(people, paired)).sort((a, b) =>
    a.account_name < b.account_name ? -1 : a.account_name > b.account_name ? 1 : 0,
  );
  return [...(await revealAccounts(people, own)), ...byName];
}

/**
 * The accounts whose agents a caller may reach besides its own: actively connected ones and, for
 * a verified person (`personEmail`), the accounts that have sent to them (decisions 4.6).
 */
async function peerAccounts(db: Knex, people: PersonalData, accountId: string, personEmail: string | null) {
  const sentTo = personEmail
    ? accountsThatSentTo(db, await people.findPerson(personEmail), personEmail)
    : null;
  return (where: Knex.QueryBuilder) => {
    where.whereIn("agents.account_id", pairedAccountIds(db, accountId));
    if (sentTo) where.orWhereIn("agents.account_id", sentTo);
  };
}

/**
 * Agents a caller can see by slug or UUID: on its own account, an actively connected one, or (for
 * a person) one that has sent to them; never disconnected ones. Anything else stays invisible, so
 * slugs of strangers cannot be probed.
 */
export async function visibleAgents(
  db: Knex,
  people: PersonalData,
  accountId: string,
  ref: string,
  personEmail: string | null = null,
): Promise<AgentWithAccount[]> {
  const peers = await peerAccounts(db, people, accountId, personEmail);
  const query = agentsWithAccounts(db)
    .whereNot({ "agents.connection_status": "disconnected" })
    .where((where) => where.where({ "agents.account_id": accountId }).orWhere(peers));
  if (isUuid(ref)) query.where({ "agents.id": ref });
  else query.where({ "agents.agent_id": ref });
  return revealAccounts(
    people,
    await query.orderBy([{ column: "agents.created_at" }, { column: "agents.id" }]),
  );
}
