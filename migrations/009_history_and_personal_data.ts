import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Decisions section 6. `personal_data_keys` is not a read model: it holds the per-person data keys
 * that personal data in events is sealed under, outside the log, and losing a row is erasure
 * (src/privacy/personal-data.ts). `history_entries` and `history_index` are the history
 * projection's: one row per event (secrets left out) and one per account, agent or transfer the
 * event belongs to. Accounts and transfers learn whose personal data they show (`person_id`,
 * `recipient_person_id`) and when an account was erased.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table personal_data_keys (
      person_id uuid primary key,
      lookup text not null unique,
      sealed_key text not null,
      created_at timestamptz not null
    );

    alter table accounts add column person_id uuid;
    alter table accounts add column erased_at timestamptz;
    create index accounts_person on accounts (person_id) where person_id is not null;
    alter table transfers add column recipient_person_id uuid;
    alter table transfers add column sender_person_id uuid;
    create index transfers_sender_person on transfers (sender_person_id) where sender_person_id is not null;
    create index transfers_recipient_person on transfers (recipient_person_id) where recipient_person_id is not null;

    create table history_entries (
      position text primary key,
      stream_id text not null,
      type text not null,
      at timestamptz not null,
      actor json not null,
      data json not null
    );
    create index history_entries_personal on history_entries (stream_id)
      where type in ('AccountCreated', 'EmailVerificationRequested', 'TransferCreated');
    create table history_index (
      subject text not null,
      position text not null,
      primary key (subject, position)
    );
    create table history_streams (
      stream_id text primary key,
      subjects text[] not null
    )
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    drop table history_streams; drop table history_index; drop table history_entries;
    drop index transfers_sender_person; alter table transfers drop column sender_person_id;
    drop index transfers_recipient_person; alter table transfers drop column recipient_person_id;
    drop index accounts_person; alter table accounts drop column erased_at; alter table accounts drop column person_id;
    drop table personal_data_keys
  `,
  );
}
