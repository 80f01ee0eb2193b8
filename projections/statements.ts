import type { Knex } from "knex";

/** A data-modifying SQL statement and its bindings, as `trx.raw` takes them. */
export interface Statement {
  sql: string;
  bindings: readonly Knex.RawBinding[];
}

/**
 * Runs independent data-modifying statements as one (all but the last as WITH clauses): one round
 * trip instead of one each. Under load a projection batch's statements cost far more in round
 * trips than in rows (each a socket write and a wake-up of the database's process). Each part sees
 * the tables as they were before the statement, so none may depend on another's rows, and no two
 * may change the same row.
 */
export async function runTogether(trx: Knex.Transaction, statements: Statement[]): Promise<void> {
  const last = statements.at(-1);
  if (!last) return;
  const before = statements.slice(0, -1);
  const sql =
    before.length === 0
      ? last.sql
      : `with ${before.map((s, i) => `w${i} as (${s.sql})`).join(", ")} ${last.sql}`;
  await trx.raw(sql, [...before.flatMap((s) => s.bindings), ...last.bindings]);
}
