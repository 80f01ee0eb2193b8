import type { Knex } from "knex";
import { pairedAccountIds } from "./connections.js";
import { whereStatusAt } from "./transfer-status.js";
import type { TransferRow } from "./transfers.js";

export interface ConnectionCounts {
  active: number;
  pending_incoming: number;
  pending_outgoing: number;
}

export async function connectionCounts(db: Knex, accountId: string): Promise<ConnectionCounts> {
  const rows: {
    active: string | number;
    pending_incoming: string | number;
    pending_outgoing: string | number;
  }[] = await db("connections")
    .where((w) => w.where({ requester_account_id: accountId }).orWhere({ invitee_account_id: accountId }))
    .select(
      db.raw("count(*) filter (where status = 'active') as active"),
      db.raw("count(*) filter (where status = 'pending' and invitee_account_id = ?) as pending_incoming", [
        accountId,
      ]),
      db.raw("count(*) filter (where status = 'pending' and requester_account_id = ?) as pending_outgoing", [
        accountId,
      ]),
    );
  const row = rows[0];
  return {
    active: Number(row?.active ?? 0),
    pending_incoming: Number(row?.pending_incoming ?? 0),
    pending_outgoing: Number(row?.pending_outgoing ?? 0),
  };
}

/** Slugs of the connected agents on actively connected accounts. */
export async function pairedAgentSlugs(db: Knex, accountId: string): Promise<string[]> {
  const rows: { agent_id: string }[] = await db("agents")
    .whereIn("account_id", pairedAccountIds(db, accountId))
    .where({ connection_status: "connected" })
    .select("agent_id")
    .orderBy([{ column: "created_at" }, { column: "id" }]);
  return rows.map((row) => row.agent_id);
}

/** An agent's incoming transfers as the profile shows them: active count and the newest live ones. */
export async function agentInbox(db: Knex, agentId: string, now: Date, recent: number) {
  const incoming = () => db<TransferRow>("transfers").where({ recipient_agent_id: agentId });
  const [{ count }] = (await whereStatusAt(incoming(), ["active"], now).count({ count: "*" })) as [
    { count: string | number },
  ];
  const rows = await whereStatusAt(incoming(), ["pending", "active"], now)
    .orderBy("created_position", "desc")
    .limit(recent);
  return { unread: Number(count), recent: rows };
}
