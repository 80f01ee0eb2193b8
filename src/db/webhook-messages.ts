import type { Knex } from "knex";
import type { DeliveryStatus, WebhookAttempt, WebhookMessageType } from "../../domain/webhook.js";

/** A message the reactor found in the log, before it is stored. */
export interface NewWebhookMessage {
  messageId: string;
  agentId: string;
  accountId: string;
  type: WebhookMessageType;
  /** The event's time: the body's `timestamp`. */
  occurredAt: string;
  /** The body's `data`; personal data stays sealed here, opened only as it is sent. */
  data: Record<string, unknown>;
}

/** A `webhook_messages` row: the delivery queue and its log (migrations/010_webhooks.ts). */
export interface WebhookMessageRow {
  message_id: string;
  seq: number;
  agent_id: string;
  account_id: string;
  type: WebhookMessageType;
  occurred_at: Date;
  data: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: WebhookAttempt[];
  attempt_count: number;
  failed_attempts: number;
  one_more: boolean;
  next_attempt_at: Date | null;
  lease_until: Date | null;
  created_at: Date;
}

/** A claimed message and where it goes. */
export type ClaimedMessage = WebhookMessageRow & { url: string };

/**
 * Stores the messages of one event. The ids come from the event, so an event the reactor reads
 * twice (after a crash, or on a second instance) adds nothing; the rows go in log order, so `seq`
 * is the log's order.
 */
export async function enqueueMessages(db: Knex, messages: NewWebhookMessage[], now: Date): Promise<number> {
  if (messages.length === 0) return 0;
  const inserted = await db("webhook_messages")
    .insert(
      messages.map((m) => ({
        message_id: m.messageId,
        agent_id: m.agentId,
        account_id: m.accountId,
        type: m.type,
        occurred_at: m.occurredAt,
        data: JSON.stringify(m.data),
        next_attempt_at: now,
        created_at: now,
      })),
    )
    .onConflict("message_id")
    .ignore()
    .returning("message_id");
  return inserted.length;
}

export interface ClaimRequest {
  now: Date;
  leaseUntil: Date;
  /** At most this many attempts of one agent in flight at once. */
  perAgent: number;
  /** Attempts already in flight in this process, by agent. */
  inFlight: Map<string, number>;
  limit: number;
}

/**
 * Claims due messages with a lease, so no other instance attempts them meanwhile: a claimed-row
 * lease in the queue's own table, taken by one UPDATE whose condition is checked again on each
 * row under its lock (two instances racing for a row: the second sees the first's lease and skips
 * it). A lease rather than an advisory lock because it outlives nothing: an instance that dies
 * mid-attempt frees its messages when the lease runs out, with no session to clean up, and it is
 * the same on PGlite. A first attempt goes out only after every earlier message of its agent has
 * had its own first attempt (log order per agent); retries wait for nobody.
 */
export async function claimDue(db: Knex, request: ClaimRequest): Promise<ClaimedMessage[]> {
  if (request.limit <= 0) return [];
  const { rows } = await db.raw<{ rows: ClaimedMessage[] }>(
    `update webhook_messages m set lease_until = :leaseUntil
      from agents a
      where a.id = m.agent_id
        and m.status = 'pending' and (m.lease_until is null or m.lease_until <= :now)
        and m.message_id in (
          select message_id from (
            select c.message_id, c.agent_id,
                   row_number() over (partition by c.agent_id order by c.next_attempt_at, c.seq) as rank
              from webhook_messages c join agents e on e.id = c.agent_id
             where c.status = 'pending' and c.next_attempt_at <= :now
               and (c.lease_until is null or c.lease_until <= :now)
               and e.webhook_status = 'active' and e.webhook_url is not null
               and (c.attempt_count > 0 or not exists (
                     select 1 from webhook_messages p
                      where p.agent_id = c.agent_id and p.status = 'pending'
                        and p.attempt_count = 0 and p.seq < c.seq))
          ) ranked
          where rank <= :perAgent - coalesce((:inFlight::jsonb ->> agent_id::text)::int, 0)
          limit :limit)
      returning m.*, a.webhook_url as url`,
    {
      now: request.now,
      leaseUntil: request.leaseUntil,
      perAgent: request.perAgent,
      inFlight: JSON.stringify(Object.fromEntries(request.inFlight)),
      limit: request.limit,
    },
  );
  return rows;
}

/** The earliest time a message becomes due, or null when none waits. */
export async function nextDueAt(db: Knex): Promise<Date | null> {
  const row = await db("webhook_messages")
    .where({ status: "pending" })
    .min<{ due: Date | null }>("next_attempt_at as due")
    .first();
  return row?.due ? new Date(row.due) : null;
}

export interface Settled {
  status: DeliveryStatus;
  nextAttemptAt: string | null;
  /** Whether this attempt counts in the retry schedule (a redelivery's does not). */
  scheduled: boolean;
}

/** Records an attempt's result on its row and frees the lease. */
export async function settleAttempt(
  db: Knex,
  messageId: string,
  attempt: WebhookAttempt,
  settled: Settled,
): Promise<void> {
  const failed = settled.status !== "delivered" && settled.scheduled ? 1 : 0;
  await db.raw(
    `update webhook_messages set status = ?, next_attempt_at = ?, lease_until = null, one_more = false,
        attempts = attempts || ?::jsonb, attempt_count = attempt_count + 1,
        failed_attempts = failed_attempts + ?
      where message_id = ?`,
    [settled.status, settled.nextAttemptAt, JSON.stringify([attempt]), failed, messageId],
  );
}

/**
 * Decisions 8.3: one more attempt, same id and body. A message still in its schedule is only
 * brought forward; a delivered or failed one gets a single attempt that schedules no other.
 */
export async function redeliver(
  db: Knex,
  agentId: string,
  messageId: string,
  now: Date,
): Promise<WebhookMessageRow | undefined> {
  const { rows } = await db.raw<{ rows: WebhookMessageRow[] }>(
    `update webhook_messages set one_more = (status <> 'pending'), status = 'pending', next_attempt_at = ?
      where message_id = ? and agent_id = ? returning *`,
    [now, messageId, agentId],
  );
  return rows[0];
}

/**
 * Keeps how long an agent's endpoint has failed without one delivery in between; returns since
 * when (null after a delivery).
 */
export async function noteEndpointResult(
  db: Knex,
  agentId: string,
  delivered: boolean,
  at: Date,
): Promise<Date | null> {
  const { rows } = await db.raw<{ rows: { failing_since: Date | null }[] }>(
    delivered
      ? "update webhook_endpoints set failing_since = null where agent_id = ? returning failing_since"
      : "update webhook_endpoints set failing_since = coalesce(failing_since, ?) where agent_id = ? returning failing_since",
    delivered ? [agentId] : [at, agentId],
  );
  const since = rows[0]?.failing_since;
  return since ? new Date(since) : null;
}

/** Decisions 8.3: a URL set again starts the endpoint afresh, its failing days forgotten. */
export async function forgetFailures(db: Knex, agentId: string): Promise<void> {
  await db("webhook_endpoints").where({ agent_id: agentId }).update({ failing_since: null });
}
