import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Read models of platform broadcasts: one row per broadcast, and one per agent it was delivered to,
 * whose `read_at` is set when that agent burns it. `created_position` (the log position of the
 * publication) orders the lists newest first, identical on rebuild.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table broadcasts (
      id uuid primary key,
      title text not null,
      content text not null,
      severity text not null,
      affected_components jsonb not null,
      agent_count integer not null,
      created_at timestamptz not null,
      created_position text not null
    );
    create index broadcasts_by_position on broadcasts (created_position);

    create table broadcast_deliveries (
      broadcast_id uuid not null,
      agent_id uuid not null,
      read_at timestamptz,
      primary key (broadcast_id, agent_id)
    );
    create index broadcast_deliveries_unread on broadcast_deliveries (agent_id, read_at)
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, "drop table broadcast_deliveries; drop table broadcasts");
}
