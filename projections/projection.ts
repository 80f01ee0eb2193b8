import type { Knex } from "knex";
import type { RecordedEvent } from "../domain/recorded-event.js";
import { categoryOf, idOf } from "../domain/streams.js";

/**
 * A projector: folds events into the rows of its tables. `apply` runs inside the transaction that
 * also moves the projection's checkpoint, and must depend on nothing but the event and the rows,
 * so a rebuild from the log gives identical rows.
 */
export interface Projection {
  name: string;
  tables: string[];
  /**
   * Those of `tables` the projection only ever inserts into, never reading, updating or upserting
   * a row while it applies events: a rebuild loads them without their keys and builds those once
   * at the end, where a key of random order would otherwise cost a B-tree insert far from the last
   * one for every row (src/read-models/rebuild-beside.ts).
   */
  insertOnly?: string[];
  apply(trx: Knex.Transaction, event: RecordedEvent): Promise<void>;
  /**
   * The events `apply` acts on (absent: all of them); the engine passes over the others without
   * calling it. Most projections follow one stream category, and a transfer's events would
   * otherwise cost every one of them an asynchronous call that does nothing.
   */
  sees?(event: RecordedEvent): boolean;
  /**
   * When present, the engine hands over a batch's events at once (in log order) instead, with what
   * rowsOfBatch made of exactly those events when it was asked first.
   */
  applyBatch?(trx: Knex.Transaction, events: RecordedEvent[], rows?: BatchRows): Promise<void>;
  /**
   * With applyBatch: the part of a batch's work that writes nothing (its rows made in memory, what
   * they need looked up), so that a replay makes the next batch's rows while the database writes
   * this one's (replayLog). `db` shows the rows of every batch before `earlier`, what was made
   * of the batch just before this one, whose rows may not be written yet.
   */
  rowsOfBatch?(
    db: Knex | Knex.Transaction,
    events: RecordedEvent[],
    earlier: BatchRows | null,
  ): Promise<BatchRows>;
}

/** What a projection's rowsOfBatch made of a batch of events, for its applyBatch. */
export interface BatchRows {
  /** The events it was made of. */
  readonly events: RecordedEvent[];
}

/** Whether `projection` acts on `event` (Projection.sees). */
export function sees(projection: Projection, event: RecordedEvent): boolean {
  return projection.sees?.(event) ?? true;
}

/**
 * A projection of one stream category: it sees only that category's events, narrowed to the
 * domain union `E`, with the aggregate id taken from the stream name.
 */
export function categoryProjection<E extends { type: string; data: unknown }>(definition: {
  name: string;
  tables: string[];
  category: string;
  apply(trx: Knex.Transaction, event: E, id: string, recorded: RecordedEvent): Promise<void>;
}): Projection {
  return {
    name: definition.name,
    tables: definition.tables,
    sees: (recorded) => categoryOf(recorded.streamId) === definition.category,
    async apply(trx, recorded) {
      const event = { type: recorded.type, data: recorded.data } as E;
      await definition.apply(trx, event, idOf(recorded.streamId), recorded);
    },
  };
}

/**
 * Decisions 6.5: an erased account's credentials stop working at once. Wraps a projection whose
 * `table` rows belong to an account (`account_id`) and end when `column` is set: on AccountErased
 * every such row still open ends at the erasure's time.
 */
export function endedOnErasure(inner: Projection, table: string, column: string): Projection {
  return {
    ...inner,
    sees: (recorded) => recorded.type === "AccountErased" || sees(inner, recorded),
    async apply(trx, recorded) {
      if (recorded.type !== "AccountErased") return inner.apply(trx, recorded);
      const { accountId, at } = recorded.data as { accountId: string; at: string };
      await trx(table)
        .where({ account_id: accountId })
        .whereNull(column)
        .update({ [column]: at });
    },
  };
}
