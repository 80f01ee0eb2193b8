import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { startContainers } from "./containers.js";

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string | null;
    postgresSkipReason: string;
    eventStoreUrl: string | null;
    eventStoreSkipReason: string;
    /** A migrated embedded database's folder, copied by the suites (seedEmbeddedDatabase). */
    pgliteTemplate: string;
  }
}

/**
 * initdb and the migrations cost an embedded database several seconds of CPU, and the suite opens
 * well over a hundred: it is made once here, in a process of its own, and copied.
 */
function makePgliteTemplate(): { directory: string; remove(): void } {
  const root = mkdtempSync(join(tmpdir(), "handoff-pglite-template-"));
  const directory = join(root, "pg");
  const made = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", "tsx", "test/support/make-pglite-template.ts", directory],
    { stdio: ["ignore", "inherit", "inherit"] },
  );
  if (made.status !== 0) throw new Error("making the embedded database template failed");
  return { directory, remove: () => rmSync(root, { recursive: true, force: true }) };
}

/**
 * Makes the embedded database the suites copy, then finds the real servers they may use: a variable when it is set (CI sets them all),
 * else a testcontainers container where a container runtime exists, else none, with the reason.
 */
export default async function setup(project: TestProject) {
  const template = makePgliteTemplate();
  project.provide("pgliteTemplate", template.directory);
  const containers = await startContainers({
    postgres: !process.env.TEST_DATABASE_URL,
    eventStore: !process.env.EVENTSTORE_URL,
  });
  const postgresUrl = process.env.TEST_DATABASE_URL ?? containers.postgresUrl;
  const eventStoreUrl = process.env.EVENTSTORE_URL ?? containers.eventStoreUrl;
  project.provide("postgresUrl", postgresUrl);
  project.provide(
    "postgresSkipReason",
    postgresUrl ? "" : `no PostgreSQL: set TEST_DATABASE_URL (${containers.reason})`,
  );
  project.provide("eventStoreUrl", eventStoreUrl);
  project.provide(
    "eventStoreSkipReason",
    eventStoreUrl ? "" : `no KurrentDB: set EVENTSTORE_URL (${containers.reason})`,
  );
  for (const [name, url, reason] of [
    ["PostgreSQL", postgresUrl, "TEST_DATABASE_URL"],
    ["KurrentDB", eventStoreUrl, "EVENTSTORE_URL"],
  ] as const) {
    if (!url) console.warn(`[handoff tests] ${name} suites skipped: set ${reason} (${containers.reason})`);
  }
  return async () => {
    template.remove();
    await containers.stop();
  };
}
