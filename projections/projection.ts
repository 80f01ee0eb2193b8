import type { Knex } from "knex";
import type { RecordedEvent } from "../src/eventstore/port.js";

/**
 * A projector: folds events into the rows of its tables. `apply` runs inside the transaction that
 * also moves the projection's checkpoint, and must depend on nothing but the event and the rows,
 * so a rebuild from the log gives identical rows.
 */
export interface Projection {
  name: string;
  tables: string[];
  apply(trx: Knex.Transaction, event: RecordedEvent): Promise<void>;
}

/** Narrows a recorded event to the domain union it belongs to. */
export function asDomainEvent<E extends { type: string; data: unknown }>(event: RecordedEvent): E {
  return { type: event.type, data: event.data } as E;
}
