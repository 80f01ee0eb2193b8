import type { Knex } from "knex";

/** Runs a script one statement at a time: PGlite's extended protocol takes a single statement per query. */
export async function runStatements(knex: Knex, script: string): Promise<void> {
  for (const statement of script.split(";").map((s) => s.trim())) {
    if (statement) await knex.raw(statement);
  }
}
