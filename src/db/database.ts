import { mkdirSync } from "node:fs";
import knex, { type Knex } from "knex";
import ClientPgLite from "knex-pglite";
import pg from "pg";
import { migrationSource } from "../../migrations/index.js";
import { PGliteThread } from "./pglite-thread.js";

// bigint and numeric come back as strings from pg but as numbers from PGlite; read models only keep
// counters and sizes that fit a double, so both drivers hand back numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** `schema`: a PostgreSQL schema to work in instead of public (a replay's scratch schema). */
export type DatabaseTarget =
  | { kind: "postgres"; url: string; schema?: string }
  | { kind: "pglite"; directory: string | null };

/** A knex instance on real PostgreSQL or on embedded PGlite (in memory when `directory` is null). */
export function openDatabase(target: DatabaseTarget): Knex {
  if (target.kind === "postgres") {
    return knex({
      client: "pg",
      connection: target.url,
      pool: { min: 0, max: 10 },
      ...(target.schema ? { searchPath: [target.schema] } : {}),
    });
  }
  if (target.directory) mkdirSync(target.directory, { recursive: true });
  return knex({
    client: ClientPgLite,
    dialect: "postgres",
    // knex-pglite takes a PGlite-like instance here; knex's own types know only URLs and settings.
    connection: { pglite: new PGliteThread(target.directory) } as Knex.StaticConnectionConfig,
  });
}

export async function migrate(db: Knex): Promise<void> {
  await db.migrate.latest({ migrationSource });
}
