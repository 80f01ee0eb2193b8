import { mkdirSync } from "node:fs";
import { join } from "node:path";
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

/** The PGlite thread under each embedded knex instance, to wait for it before the first query. */
const embedded = new WeakMap<Knex, PGliteThread>();

/** Where a data folder keeps its embedded database. */
export function embeddedDirectory(dataDir: string): string {
  return join(dataDir, "pg");
}

/** Connections a PostgreSQL server's pool holds: as many statements as run at once. */
const POOL_SIZE = 10;

/**
 * How many statements the database runs at once: the pool's connections on PostgreSQL, one on the
 * embedded database (PGlite runs one statement at a time).
 */
export function statementsAtOnce(db: Knex): number {
  return embedded.has(db) ? 1 : POOL_SIZE;
}

/** A knex instance on real PostgreSQL or on embedded PGlite (in memory when `directory` is null). */
export function openDatabase(target: DatabaseTarget): Knex {
  if (target.kind === "postgres") {
    return knex({
      client: "pg",
      connection: target.url,
      pool: { min: 0, max: POOL_SIZE },
      ...(target.schema ? { searchPath: [target.schema] } : {}),
    });
  }
  if (target.directory) mkdirSync(target.directory, { recursive: true });
  const pglite = new PGliteThread(target.directory);
  const db = knex({
    client: ClientPgLite,
    dialect: "postgres",
    // knex-pglite takes a PGlite-like instance here; knex's own types know only URLs and settings.
    connection: { pglite } as Knex.StaticConnectionConfig,
  });
  embedded.set(db, pglite);
  return db;
}

export async function migrate(db: Knex): Promise<void> {
  // A new folder's initdb can take a minute or more on a busy machine: past the 30 s knex's pool
  // gives a connection to open (not configurable under knex-pglite), which then failed the
  // start-up with a misleading pool time-out. Waiting here first, the connection opens at once.
  await embedded.get(db)?.waitReady;
  await db.migrate.latest({ migrationSource });
}
