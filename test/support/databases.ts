import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Knex } from "knex";
import { inject } from "vitest";
import { type DatabaseTarget, embeddedDirectory, migrate, openDatabase } from "../../src/db/database.js";
import { freshPostgres } from "./fresh-postgres.js";

export { freshPostgres };

export const postgresServer = inject("postgresUrl");
export const postgresSkipReason = inject("postgresSkipReason");
export const eventStoreServer = inject("eventStoreUrl");
export const eventStoreSkipReason = inject("eventStoreSkipReason");

/** A suite title that says why it is skipped, so a skip is never silent. */
export function titled(title: string, skipReason: string): string {
  return skipReason ? `${title} (skipped: ${skipReason})` : title;
}

/**
 * An embedded database at `directory` as a first start leaves it (initdb, every migration), copied
 * from the one the global setup made: a fraction of a second instead of several of CPU.
 */
export function seedEmbeddedDatabase(directory: string): void {
  cpSync(inject("pgliteTemplate"), directory, { recursive: true });
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

/** A migrated database: PGlite in a temporary folder (a copy of the template), or a fresh one on the real server. */
export async function migratedDatabase(kind: "pglite" | "postgres"): Promise<TestDatabase> {
  if (kind === "pglite") {
    const dir = tempDir();
    const target: DatabaseTarget = { kind: "pglite", directory: embeddedDirectory(dir.path) };
    seedEmbeddedDatabase(target.directory as string);
    const db = openDatabase(target);
    await migrate(db);
    return {
      db,
      target,
      async close() {
        await db.destroy();
        dir.remove();
      },
    };
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
