import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Decisions 8.1–8.3. `agents.webhook_status` is the agents projection's. The two tables are not
 * read models and are never rebuilt: `webhook_endpoints` holds each agent's signing secrets sealed
 * under the server key (never in the log, which is never rewritten) and how long its endpoint has
 * been failing; `webhook_messages` is the delivery queue and log the webhook reactor fills from the
 * event log (one row per message, its id derived from the event, so a replay adds nothing) and the
 * dispatcher works through, claiming a row with a lease (`lease_until`) before each attempt. Every
 * attempt is also recorded in the event log (WebhookAttempted), for the history.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    alter table agents add column webhook_status text;
    update agents set webhook_status = 'active' where webhook_url is not null;

    create table webhook_endpoints (
      agent_id uuid primary key,
      sealed_secret text not null,
      sealed_previous text,
      previous_valid_until timestamptz,
      failing_since timestamptz
    );

    create table webhook_messages (
      message_id text primary key,
      seq bigserial not null,
      agent_id uuid not null,
      account_id uuid not null,
      type text not null,
      occurred_at timestamptz not null,
      data json not null,
      status text not null default 'pending',
      attempts jsonb not null default '[]',
      attempt_count integer not null default 0,
      failed_attempts integer not null default 0,
      one_more boolean not null default false,
      next_attempt_at timestamptz,
      lease_until timestamptz,
      created_at timestamptz not null
    );
    create index webhook_messages_due on webhook_messages (next_attempt_at) where status = 'pending';
    create index webhook_messages_agent on webhook_messages (agent_id, seq);
    create index webhook_messages_unsent on webhook_messages (agent_id, seq)
      where status = 'pending' and attempt_count = 0
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    drop table webhook_messages; drop table webhook_endpoints;
    alter table agents drop column webhook_status
  `,
  );
}
