import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Snapshots of aggregates whose streams grow with use (an account's quota stream gains events with
 * every transfer): the folded state at a revision, so a command folds only what came after. A cache
 * of the log, never a source of truth: the table may be emptied at any time. The account_usage read
 * model goes: nothing read it, and the quota stream is the one definition of storage in use. A
 * send finds the sender's overdue transfers by the new index, to free their storage at once.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table aggregate_snapshots (
      stream_id text primary key,
      kind text not null,
      revision bigint not null,
      state jsonb not null
    );
    drop table account_usage;
    create index transfers_live_by_sender on transfers (sender_account_id, expires_at)
      where status in ('pending', 'pending_recipient', 'active', 'downloaded');
    delete from projection_checkpoints where name = 'account_usage';
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    drop table aggregate_snapshots;
    drop index transfers_live_by_sender;
    create table account_usage (
      account_id uuid primary key,
      storage_bytes bigint not null,
      transfers_by_period jsonb not null
    );
  `,
  );
}
