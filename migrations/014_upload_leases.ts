import type { Knex } from "knex";
import { runStatements } from "./statements.js";

/**
 * Issue 34: a tus upload's lease across instances (src/db/upload-leases.ts). One row per upload
 * being written: the request holding it (`holder`), until when (`lease_until`, renewed while the
 * request streams, so a killed instance's lease lapses), and since when another instance asks for
 * it (`wanted_at`: the holder then stops and commits, as a second request on one instance asks the
 * first to). Not a read model: nothing in the log says who writes an upload right now.
 */
export async function up(knex: Knex): Promise<void> {
  await runStatements(
    knex,
    `
    create table upload_leases (
      upload_key text primary key,
      holder text not null,
      lease_until timestamptz not null,
      wanted_at timestamptz
    )
  `,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw("drop table upload_leases");
}
