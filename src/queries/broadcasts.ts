import type { Knex } from "knex";
import { type BroadcastSeverity, URGENT_SEVERITIES } from "../../domain/broadcast.js";
import type { BroadcastRow } from "../../projections/broadcasts.js";
import { isUuid } from "./agents.js";

export type { BroadcastRow };

const COLUMNS = [
  "b.id",
  "b.title",
  "b.content",
  "b.severity",
  "b.affected_components",
  "b.agent_count",
  "b.created_at",
  "b.created_position",
];

export async function findBroadcast(db: Knex, id: string): Promise<BroadcastRow | undefined> {
  if (!isUuid(id)) return undefined;
  return db<BroadcastRow>("broadcasts").where({ id }).first();
}

/** The broadcasts delivered to an agent that it has not read yet. */
function unread(db: Knex, agentId: string) {
  return db("broadcasts as b")
    .join("broadcast_deliveries as d", "d.broadcast_id", "b.id")
    .where("d.agent_id", agentId)
    .whereNull("d.read_at");
}

export interface UnreadQuery {
  /** The agent's UUID. */
  agentId: string;
  severity: BroadcastSeverity | null;
  limit: number;
  offset: number;
}

/** An agent's unread broadcasts, newest first, and how many there are in all. */
export async function listUnreadBroadcasts(
  db: Knex,
  q: UnreadQuery,
): Promise<{ rows: BroadcastRow[]; total: number }> {
  const base = unread(db, q.agentId);
  if (q.severity) base.where("b.severity", q.severity);
  const [{ count }] = (await base.clone().count({ count: "*" })) as [{ count: string | number }];
  const rows: BroadcastRow[] = await base
    .select(COLUMNS)
    .orderBy("b.created_position", "desc")
    .limit(q.limit)
    .offset(q.offset);
  return { rows, total: Number(count) };
}

export async function unreadBroadcastCount(db: Knex, agentId: string): Promise<number> {
  const [{ count }] = (await unread(db, agentId).count({ count: "*" })) as [{ count: string | number }];
  return Number(count);
}

/** Unread broadcasts of severity `critical` or `action_required`, newest first (startup profile). */
export async function urgentUnreadBroadcasts(
  db: Knex,
  agentId: string,
  limit?: number,
): Promise<BroadcastRow[]> {
  const query = unread(db, agentId)
    .whereIn("b.severity", URGENT_SEVERITIES)
    .select(COLUMNS)
    .orderBy("b.created_position", "desc");
  if (limit !== undefined) query.limit(limit);
  return query;
}

/**
 * The agents a broadcast can be delivered to: every agent that is not disconnected, oldest first,
 * or, given `among`, those of them (the ids not returned are unknown or disconnected).
 */
export async function deliverableAgentIds(db: Knex, among?: string[]): Promise<string[]> {
  const query = db("agents").select("id").whereNot({ connection_status: "disconnected" });
  if (among) query.whereIn("id", among.filter(isUuid));
  const rows: { id: string }[] = await query.orderBy([{ column: "created_at" }, { column: "id" }]);
  return rows.map((row) => row.id);
}
