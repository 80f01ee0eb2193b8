import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/** Read models of transfers (list, get, inbox, housekeeping) and of each account's usage. */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table transfers (
      id text primary key,
      mode text not null,
      sender text not null,
      sender_account_id uuid not null,
      sender_agent_id uuid,
      recipient text not null,
      recipient_account_id uuid,
      recipient_agent_id uuid,
      status text not null,
      pending_reason text,
      files jsonb not null,
      file_count integer not null,
      total_size bigint not null,
      max_downloads integer not null,
      downloads integer not null,
      auto_delete boolean not null,
      is_encrypted boolean not null,
      message text,
      metadata jsonb not null,
      encryption jsonb not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      created_position text not null,
      inbox_position text not null,
      files_deleted boolean not null default false,
      purge_after timestamptz
    );
    create index transfers_sent on transfers (sender_account_id, created_position);
    create index transfers_received on transfers (recipient_account_id, created_position);
    create index transfers_inbox on transfers (recipient_agent_id, inbox_position);
    create index transfers_live_by_expiry on transfers (expires_at) where status in ('pending', 'pending_recipient', 'active', 'downloaded');
    create index transfers_to_purge on transfers (purge_after) where not files_deleted;

    create table account_usage (
      account_id uuid primary key,
      storage_bytes bigint not null,
      transfers_by_period jsonb not null
    )
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, "drop table account_usage; drop table transfers");
}
