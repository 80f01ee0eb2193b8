import { randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { PersonalData } from "../../src/privacy/personal-data.js";
import { migratedDatabase, type TestDatabase } from "../support/databases.js";

/** Keys made by many requests at once go into one statement: each person still gets their own. */
describe("personal data keys made at once", () => {
  let database: TestDatabase;
  afterEach(async () => database?.close());

  it("give one address one person, and each name-only sender a person of their own", async () => {
    database = await migratedDatabase("pglite");
    const people = new PersonalData(database.db, randomBytes(32), { keysFlushWithLog: true });

    const [byAddress, named] = await Promise.all([
      Promise.all(Array.from({ length: 20 }, () => people.personFor("Ana@Example.com"))),
      Promise.all(Array.from({ length: 20 }, (_, i) => people.newPerson(`Sender ${i}`))),
    ]);

    expect(new Set(byAddress).size).toBe(1);
    expect(await people.findPerson("ana@example.com")).toBe(byAddress[0]);
    expect(new Set(named.map((person) => person.personId)).size).toBe(20);
    expect(await people.reveal(named.map((person) => person.sealed))).toEqual(
      named.map((_, i) => `Sender ${i}`),
    );
  });
});
