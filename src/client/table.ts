import { printJson } from "./output.js";
import { terminalSafe } from "./terminal-text.js";

/** One column of a table for people: its heading and how a row shows in it. */
export interface Column<Row> {
  heading: string;
  value: (row: Row) => string | number | boolean | null | undefined;
}

/** Rows as aligned columns under their headings, the way `gh` lists things; `empty` when none. */
export function formatTable<Row>(rows: Row[], columns: Column<Row>[], empty: string): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = [
    columns.map((column) => column.heading),
    ...rows.map((row) => columns.map((column) => oneLine(column.value(row)))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((line) => (line[i] ?? "").length)));
  return cells
    .map((line) =>
      line
        .map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join("");
}

/** A cell on one line, with what a terminal would act on (a hostile name's escapes, bidi overrides) shown, not acted on. */
function oneLine(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "-";
  return terminalSafe(String(value).replace(/\s+/g, " "));
}

/** A list for people as a table, or with --json the API's own JSON. */
export function printList<Row>(
  json: boolean | undefined,
  answer: unknown,
  rows: Row[],
  columns: Column<Row>[],
  empty: string,
): void {
  if (json) printJson(answer);
  else process.stdout.write(formatTable(rows, columns, empty));
}

/** 1048576 → "1.0 MiB": sizes as people read them. */
export function humanBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`;
}
