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

/**
 * How many statements of one kind go to the database at once before the next calls wait and go
 * together (db/batched.ts): one on the embedded database, which runs one statement at a time. On
 * PostgreSQL no limit: its pool queues what it cannot run, and batching beyond the pool's ten was
 * slower there (one-time transfers on four accounts: 176 and 181 pairs/s against 221 and 241).
 */
export function statementsAtOnce(db: Knex): number {
  return embedded.has(db) ? 1 : Number.POSITIVE_INFINITY;
}

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
