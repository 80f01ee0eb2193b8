/**
 * How a projection writes the rows of its read model. Each read-model table has one row shape,
 * declared beside the projection that writes it (`TransferRow` in projections/transfers.ts, …) and
 * imported by the queries that read it (src/queries/*.ts): a column renamed or retyped there fails
 * the type check on both sides. A shape is the row as a query reads it back (timestamps as Dates,
 * JSON columns as values); `Inserted` and `Changed` derive what a projection writes.
 */

/** A column as a projection writes it: times as ISO strings, JSON columns as values or JSON text. */
type Written<Column> = Column extends Date ? string : Column extends object ? Column | string : Column;

type NullableColumns<Row> = { [K in keyof Row]-?: null extends Row[K] ? K : never }[keyof Row];

/**
 * A new row as a projection inserts it: columns that may be null, and those the table gives a
 * default (`Defaulted`), may be left out.
 */
export type Inserted<Row, Defaulted extends keyof Row = never> = {
  [K in Exclude<keyof Row, NullableColumns<Row> | Defaulted>]: Written<Row[K]>;
} & { [K in NullableColumns<Row> | Defaulted]?: Written<Row[K]> };

/** The columns a projection changes on a row. */
export type Changed<Row> = { [K in keyof Row]?: Written<Row[K]> };
