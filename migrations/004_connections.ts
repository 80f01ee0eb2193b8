import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/** Account connections: who may send to, and resolve, whose agents. */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table connections (
      id uuid primary key,
      pair text not null,
      requester_account_id uuid not null,
      invitee_account_id uuid not null,
      status text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    );
    create index connections_by_requester on connections (requester_account_id, status);
    create index connections_by_invitee on connections (invitee_account_id, status)
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(knex, "drop table connections");
}
