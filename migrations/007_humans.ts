import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * People (decisions section 4). `accounts.kind` comes from AccountCreated (accounts from before
 * it are agent accounts); `humans` and `sessions` are the humans projection's. An agent-to-human
 * transfer is found by its recipient's address while no account holds it yet.
 *
 * `held_content_keys` is not a read model: it holds the content key of each transfer waiting for
 * its person, sealed under the server key, outside the log so that it can really be destroyed
 * when the key is wrapped to the person (an event records that). Like `aggregate_snapshots` it is
 * never rebuilt.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    alter table accounts add column kind text not null default 'agent';

    create table humans (
      account_id uuid primary key,
      email_verified boolean not null,
      receiving_key jsonb
    );

    create table sessions (
      id uuid primary key,
      account_id uuid not null,
      expires_at timestamptz not null,
      ended_at timestamptz
    );
    create index sessions_by_account on sessions (account_id);

    create index transfers_to_person on transfers (lower(recipient)) where mode = 'agent-to-human';

    create table held_content_keys (
      transfer_id text primary key,
      sealed_key text not null
    )
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    drop table held_content_keys;
    drop index transfers_to_person;
    drop table sessions;
    drop table humans;
    alter table accounts drop column kind
  `,
  );
}
