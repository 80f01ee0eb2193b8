import type { Knex } from "knex";
import type { Projection } from "../../projections/projection.js";
import { type EventStore, isAfter, type Position } from "../eventstore/port.js";
import { type Checkpoints, type PrepareBatch, replayLog } from "./engine.js";

/**
 * The log as read on a connection: the switch reads the last events inside its transaction (on
 * embedded PGlite, whose one connection the transaction holds, nothing else could read them). An
 * event store in another database (KurrentDB) ignores the connection.
 */
export type LogOn = (db: Knex | Knex.Transaction) => EventStore;

/** What a rebuild beside the live read models is doing, for its progress line. */
export type BesideProgress =
  | { phase: "fill"; events: number }
  | { phase: "index"; tables: number }
  | { phase: "switch"; attempt: number }
  | { phase: "done"; events: number; position: Position | null };

/**
 * How long the switch waits for each lock before it lets go of them all and tries again. Below
 * PostgreSQL's deadlock_timeout (1 s by default) even summed over the tables, so that when a
 * reader's statement and the switch wait on each other, the switch gives way, never the reader.
 */
const SWITCH_LOCK_TIMEOUT = "50ms";
const SWITCH_RETRY_PAUSE_MS = 100;
/**
 * Batches the switch may apply under its locks to reach the live tables' checkpoints (what is
 * newer the live engine applies after it); further behind, it lets go and catches up first.
 */
const SWITCH_CATCH_UP_BATCHES = 2;
/** PostgreSQL's lock_not_available: a lock wait ran past lock_timeout. */
const LOCK_NOT_AVAILABLE = "55P03";

/**
 * Rebuilds `chosen` projections' tables from the whole log beside the live ones, while the service
 * keeps reading and projecting into those, then switches them in:
 *
 * 1. A new schema `handoff_rebuild_<n>` gets empty copies of the tables (columns,
 *    defaults, checks, and the primary keys and unique constraints the projections' look-ups and
 *    upserts need, under their live names) and a checkpoint table of its own. Each batch's transaction puts that schema first on its search_path, so the
 *    projections' own statements write there; everything else (the log) is found in the live one.
 * 2. The log is applied in bounded batches (replayLog). Then each table gets the keys of the
 *    insert-only tables and every other index, built once over the filled table (a sort instead
 *    of a B-tree insert per row: the cost per event stays flat as the log grows), and the log that
 *    arrived in the meantime is applied. The tables are logged throughout: filled unlogged and
 *    made logged at the end, each was copied once more and written to the WAL whole, which cost
 *    more than the WAL of the inserts (a whole rebuild of 400,000 events on 2026-11-29, load about
 *    4: 17–21 s against 14.5–15.5 s).
 * 3. One short transaction takes the live checkpoints' rows (the live engine's next batch waits),
 *    then every live table (readers queue for a moment), applies the last events until the new
 *    tables are at least where the live ones are (so a reader told the read models had reached its
 *    write still finds it), moves the live tables out and the new ones into the live schema, and
 *    sets the live checkpoints to where the new tables are. A statement that waited on the old
 *    table finds the new one by its name when it runs. The live engine's next batch finds its
 *    checkpoints moved (or exactly where it left them), reads them again and goes on from there,
 *    so no event between the rebuild's end and the switch is missed or applied twice.
 *
 * Works on any knex over PostgreSQL, embedded PGlite included (there the one connection makes
 * every step wait its turn instead of a lock). Returns the position the new tables were switched
 * in at.
 */
export async function rebuildBeside(
  db: Knex,
  logOn: LogOn,
  chosen: Projection[],
  progress: (p: BesideProgress) => void,
): Promise<Position | null> {
  const live = await currentSchema(db);
  const schema = await freeSchemaName(db, "handoff_rebuild");
  const tables = chosen.flatMap((p) => p.tables);
  const keyedLater = new Set(chosen.flatMap((p) => p.insertOnly ?? []));
  try {
    await db.transaction(async (trx) => {
      await trx.raw("create schema ??", [schema]);
      for (const table of tables) {
        await copyTable(trx, live, schema, table);
        if (!keyedLater.has(table)) await copyConstraints(trx, live, schema, table);
      }
      await trx.raw("create table ??.projection_checkpoints (like ??.projection_checkpoints including all)", [
        schema,
        live,
      ]);
      await trx.raw("insert into ??.projection_checkpoints (name) select unnest(?::text[])", [
        schema,
        chosen.map((p) => p.name),
      ]);
    });
    let events = 0;
    const fill = (checkpoints: Checkpoints) =>
      replayLog(db, logOn(db), chosen, checkpoints, {
        prepare: buildingIn(schema, live),
        onBatch: (applied) => {
          events += applied;
          progress({ phase: "fill", events });
        },
      });
    let checkpoints = await fill(new Map(chosen.map((p) => [p.name, null])));
    progress({ phase: "index", tables: tables.length });
    // Each table on a connection of its own, all at once: each index is one statement that keeps
    // a database process busy, and the tables' can be built side by side. All end before a failure
    // is thrown, so that none is still building when the schema is dropped.
    const built = await Promise.allSettled(
      tables.map(async (table) => {
        if (keyedLater.has(table)) await copyConstraints(db, live, schema, table);
        await copyIndexes(db, live, schema, table);
      }),
    );
    const failed = built.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    checkpoints = await fill(checkpoints);
    for (let attempt = 1; ; attempt++) {
      progress({ phase: "switch", attempt });
      const from = checkpoints;
      const switched = await switchIn(db, live, schema, tables, (trx) =>
        replayLog(trx, logOn(trx), chosen, from, {
          prepare: buildingIn(schema, live),
          batches: SWITCH_CATCH_UP_BATCHES,
        }),
      );
      if (switched) {
        checkpoints = switched;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, SWITCH_RETRY_PAUSE_MS));
      checkpoints = await fill(checkpoints);
    }
    const position = [...checkpoints.values()].sort().at(0) ?? null;
    progress({ phase: "done", events, position });
    return position;
  } finally {
    await db.raw("drop schema if exists ?? cascade", [schema]);
  }
}

/** A rebuild batch writes into `schema`, finds the rest in `live`, and does not wait for its commit to reach the disk (a crash only loses the rebuild). */
function buildingIn(schema: string, live: string): PrepareBatch {
  return async (trx) => {
    await trx.raw(
      "select set_config('search_path', ?, true), set_config('synchronous_commit', 'off', true)",
      [`"${schema}", "${live}"`],
    );
  };
}

/** The switch gave way (a lock not granted in time, the new tables still behind): nothing changed, try again. */
class NotYet extends Error {}

/**
 * The switch, in one transaction: the checkpoints the switched-in tables are at, or null when it
 * gave way (NotYet). `catchUp` applies the last events into the new tables while the live ones are
 * locked and returns where they are then.
 */
async function switchIn(
  db: Knex,
  live: string,
  schema: string,
  tables: string[],
  catchUp: (trx: Knex.Transaction) => Promise<Checkpoints>,
): Promise<Checkpoints | null> {
  const retired = await freeSchemaName(db, "handoff_retired");
  let switched: Checkpoints;
  try {
    switched = await db.transaction(async (trx) => {
      await trx.raw("select set_config('lock_timeout', ?, true)", [SWITCH_LOCK_TIMEOUT]);
      const held = await trx.raw<{ rows: { name: string; position: Position | null }[] }>(
        "select name, position from ??.projection_checkpoints order by name for update",
        [live],
      );
      const ordered = [...tables].sort();
      await trx.raw(
        `lock table ${ordered.map(() => "??.??").join(", ")} in access exclusive mode`,
        ordered.flatMap((table) => [live, table]),
      );
      const checkpoints = await catchUp(trx);
      const ahead = held.rows.find(
        ({ name, position }) =>
          position !== null && checkpoints.has(name) && isAfter(position, checkpoints.get(name) ?? null),
      );
      if (ahead) throw new NotYet(`the live ${ahead.name} is further on than its rebuild`);
      await trx.raw("create schema ??", [retired]);
      for (const table of tables) {
        await trx.raw("alter table ??.?? set schema ??", [live, table, retired]);
        await trx.raw("alter table ??.?? set schema ??", [schema, table, live]);
      }
      await trx.raw(
        `insert into ??.projection_checkpoints (name, position)
           select key, value from jsonb_each_text(?::jsonb)
         on conflict (name) do update set position = excluded.position`,
        [live, JSON.stringify(Object.fromEntries(checkpoints))],
      );
      return checkpoints;
    });
  } catch (error) {
    if (error instanceof NotYet || (error as { code?: string }).code === LOCK_NOT_AVAILABLE) return null;
    throw error;
  }
  await db.raw("drop schema if exists ?? cascade", [retired]);
  return switched;
}

async function currentSchema(db: Knex): Promise<string> {
  const result = await db.raw<{ rows: { schema: string }[] }>("select current_schema() as schema");
  const schema = result.rows[0]?.schema;
  if (!schema) throw new Error("the database has no current schema (search_path names none that exists)");
  return schema;
}

/** `<prefix>_<n>`, n one past the highest such schema there is. */
async function freeSchemaName(db: Knex, prefix: string): Promise<string> {
  const result = await db.raw<{ rows: { n: number | null }[] }>(
    `select max(substring(nspname from '_(\\d+)$')::int) as n from pg_namespace where nspname ~ ?`,
    [`^${prefix}_\\d+$`],
  );
  return `${prefix}_${(result.rows[0]?.n ?? 0) + 1}`;
}

/** `live.table`, quoted, as regclass input. */
const qualified = (schema: string, table: string) => `"${schema}"."${table}"`;

/** An empty copy of `live.table` in `schema`: columns, defaults and checks. */
async function copyTable(trx: Knex.Transaction, live: string, schema: string, table: string): Promise<void> {
  await trx.raw(
    `create table ??.?? (like ??.?? including defaults including constraints including generated
       including identity including storage including comments)`,
    [schema, table, live, table],
  );
}

/**
 * The primary key, unique and exclusion constraints of `live.table` on `schema.table`, under their
 * live names, so the table is the same one migrations know once it is switched in.
 */
async function copyConstraints(db: Knex, live: string, schema: string, table: string): Promise<void> {
  const constraints = await db.raw<{ rows: { name: string; definition: string }[] }>(
    `select conname as name, pg_get_constraintdef(oid) as definition from pg_constraint
      where conrelid = ?::regclass and contype in ('p', 'u', 'x') order by conname`,
    [qualified(live, table)],
  );
  for (const { name, definition } of constraints.rows) {
    await db.raw(`alter table ??.?? add constraint ?? ${definition}`, [schema, table, name]);
  }
}

/**
 * The indexes of `live.table` that back no constraint, built on `schema.table` under the same
 * names; each is built once over the filled table rather than kept up row by row.
 */
async function copyIndexes(db: Knex, live: string, schema: string, table: string): Promise<void> {
  const indexes = await db.raw<{ rows: { name: string; definition: string }[] }>(
    `select c.relname as name, pg_get_indexdef(i.indexrelid) as definition
       from pg_index i join pg_class c on c.oid = i.indexrelid
      where i.indrelid = ?::regclass
        and not exists (select 1 from pg_constraint k where k.conindid = i.indexrelid)
      order by c.relname`,
    [qualified(live, table)],
  );
  for (const { name, definition } of indexes.rows) {
    // "CREATE [UNIQUE] INDEX name ON live.table USING …": the same index, on the new table.
    const unique = definition.startsWith("CREATE UNIQUE") ? "unique " : "";
    const method = definition.slice(definition.indexOf(" USING "));
    await db.raw(`create ${unique}index ?? on ??.?? ${method}`, [name, schema, table]);
  }
}
