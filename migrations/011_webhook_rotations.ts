import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Issue 23: a rotation's new secret is staged (`sealed_pending`, under its `pending_rotation` id)
 * before the rotation is recorded, and made current once it is (by the request, or after a crash by
 * the rotations reactor, which reads the id from the event): the table then always ends up as the
 * log says.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    alter table webhook_endpoints add column sealed_pending text;
    alter table webhook_endpoints add column pending_rotation text
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    alter table webhook_endpoints drop column pending_rotation;
    alter table webhook_endpoints drop column sealed_pending
  `,
  );
}
