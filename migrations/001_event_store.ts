import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * The PostgreSQL event store. `transaction_id` records the writing transaction so readers can
 * stay below the oldest transaction still in flight: sequence values commit out of order, and a
 * reader trusting `global_position` alone would skip an event committed late.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table event_streams (
      stream_id text primary key,
      revision bigint not null
    );
    create table events (
      global_position bigserial primary key,
      transaction_id xid8 not null default pg_current_xact_id(),
      event_id uuid not null unique,
      stream_id text not null,
      revision bigint not null,
      type text not null,
      data jsonb not null,
      metadata jsonb not null,
      recorded_at timestamptz not null default now(),
      unique (stream_id, revision)
    );
    create index events_commit_order on events (transaction_id, global_position);
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, "drop table events; drop table event_streams;");
}
