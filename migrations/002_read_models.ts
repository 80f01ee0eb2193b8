import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Read models: each table belongs to one projection (see projections/), can be truncated and
 * refilled from the log at any time, and carries no state that the log does not hold.
 * `projection_checkpoints` and `idempotency_records` are bookkeeping, not read models.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table projection_checkpoints (
      name text primary key,
      position text
    );

    create table accounts (
      id uuid primary key,
      email text not null,
      name text not null,
      plan text not null,
      created_at timestamptz not null
    );
    create index accounts_email on accounts (lower(email));

    create table agents (
      id uuid primary key,
      account_id uuid not null,
      agent_id text not null,
      name text,
      description text,
      webhook_url text,
      agent_type text not null,
      connection_status text not null,
      public_key text,
      public_key_algorithm text not null default 'X25519',
      signing_public_key text,
      signing_key_algorithm text not null default 'Ed25519',
      key_version integer,
      last_seen_at timestamptz,
      metadata jsonb not null,
      created_at timestamptz not null
    );
    create index agents_by_account on agents (account_id, created_at, id);

    create table api_keys (
      id uuid primary key,
      account_id uuid not null,
      name text not null,
      key_hash text not null unique,
      created_at timestamptz not null,
      revoked_at timestamptz
    );
    create index api_keys_by_account on api_keys (account_id);

    create table idempotency_records (
      scope text not null,
      key text not null,
      request_hash text not null,
      status_code integer,
      body text,
      created_at timestamptz not null,
      primary key (scope, key)
    );
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    "drop table idempotency_records; drop table api_keys; drop table agents; drop table accounts; drop table projection_checkpoints;",
  );
}
