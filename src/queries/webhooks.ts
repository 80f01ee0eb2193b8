import type { Knex } from "knex";
import type { WebhookMessageRow } from "../db/webhook-messages.js";

export interface DeliveriesQuery {
  agentId: string;
  /** Strictly older than this message's place in the queue. */
  before: string | null;
  limit: number;
}

/** An agent's messages, newest first (decisions 8.3). */
export async function deliveriesPage(db: Knex, q: DeliveriesQuery): Promise<WebhookMessageRow[]> {
  const query = db<WebhookMessageRow>("webhook_messages").where({ agent_id: q.agentId });
  if (q.before) query.where("seq", "<", q.before);
  return query.orderBy("seq", "desc").limit(q.limit);
}

/** A delivery as the API shows it. */
export function presentDelivery(row: WebhookMessageRow) {
  return {
    message_id: row.message_id,
    type: row.type,
    status: row.status,
    attempts: row.attempts,
    next_attempt_at:
      row.status === "pending" && row.next_attempt_at ? new Date(row.next_attempt_at).toISOString() : null,
  };
}
