import type { Knex } from "knex";
import { projections } from "../../projections/index.js";

/** Every read-model table's rows in a stable order, for comparing a live projection with a rebuild. */
export async function dumpReadModels(db: Knex): Promise<Record<string, unknown[]>> {
  const dump: Record<string, unknown[]> = {};
  for (const table of projections.flatMap((p) => p.tables)) {
    const rows = await db(table).select("*");
    // Whole rows in a stable order: tables whose first column repeats (an index by subject) too.
    dump[table] = rows
      .map((row) =>
        Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v instanceof Date ? v.toISOString() : v])),
      )
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  }
  return dump;
}
