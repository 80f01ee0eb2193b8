import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import knex, { type Knex } from "knex";
import { inject } from "vitest";
import { type DatabaseTarget, migrate, openDatabase } from "../../src/db/database.js";

export const postgresServer = inject("postgresUrl");
export const postgresSkipReason = inject("postgresSkipReason");
export const eventStoreServer = inject("eventStoreUrl");
export const eventStoreSkipReason = inject("eventStoreSkipReason");

/** A suite title that says why it is skipped, so a skip is never silent. */
export function titled(title: string, skipReason: string): string {
  return skipReason ? `${title} (skipped: ${skipReason})` : title;
}

/** A database of its own for one suite: a new database on the real server, dropped afterwards. */
export async function freshPostgres(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `handoff_test_${randomBytes(6).toString("hex")}`;
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

export function tempDir(prefix = "handoff-test-"): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

export interface TestDatabase {
  db: Knex;
  target: DatabaseTarget;
  close(): Promise<void>;
}

/** A migrated database: PGlite in memory, or a fresh one on the real server. */
export async function migratedDatabase(kind: "pglite" | "postgres"): Promise<TestDatabase> {
  if (kind === "pglite") {
    const target: DatabaseTarget = { kind: "pglite", directory: null };
    const db = openDatabase(target);
    await migrate(db);
    return { db, target, close: () => db.destroy() };
  }
  if (!postgresServer) throw new Error("no PostgreSQL server for this suite");
  const fresh = await freshPostgres(postgresServer);
  const target: DatabaseTarget = { kind: "postgres", url: fresh.url };
  const db = openDatabase(target);
  await migrate(db);
  return {
    db,
    target,
    async close() {
      await db.destroy();
      await fresh.drop();
    },
  };
}
