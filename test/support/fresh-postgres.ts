import { randomBytes } from "node:crypto";
import knex from "knex";

/**
 * A database of its own on a real PostgreSQL server (`serverUrl` names any database there, e.g.
 * `postgres`), dropped by `drop()`. Free of vitest, so the benchmarks use it too.
 */
export async function freshPostgres(
  serverUrl: string,
  prefix = "handoff_test",
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const admin = knex({ client: "pg", connection: serverUrl, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.raw(`drop database if exists ${name} with (force)`);
      await admin.destroy();
    },
  };
}
