import type { PersonalData } from "./personal-data.js";

/**
 * Rows of read models with personal data in `fields` (sealed since decisions 6.5, in clear before),
 * as they are shown: each field opened, or "[erased]". One key look-up for all of them.
 */
export async function revealRows<Row, Field extends keyof Row>(
  people: PersonalData,
  rows: Row[],
  fields: Field[],
): Promise<Row[]> {
  const stored = rows.flatMap((row) => fields.map((field) => row[field]));
  const strings = stored.filter((value): value is Row[Field] & string => typeof value === "string");
  const opened = new Map(
    (await people.reveal(strings)).map((value, index) => [strings[index] as string, value]),
  );
  return rows.map((row) => {
    const copy = { ...row };
    for (const field of fields) {
      const value = row[field];
      if (typeof value === "string") copy[field] = (opened.get(value) ?? value) as Row[Field];
    }
    return copy;
  });
}

export async function revealRow<Row, Field extends keyof Row>(
  people: PersonalData,
  row: Row,
  fields: Field[],
): Promise<Row> {
  const [revealed] = await revealRows(people, [row], fields);
  return revealed as Row;
}
