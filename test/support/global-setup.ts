import type { TestProject } from "vitest/node";
import { startContainers } from "./containers.js";

declare module "vitest" {
  export interface ProvidedContext {
    postgresUrl: string | null;
    postgresSkipReason: string;
    eventStoreUrl: string | null;
    eventStoreSkipReason: string;
  }
}

/**
 * Finds the real servers the suites may use: a variable when it is set (CI sets them all),
 * else a testcontainers container where a container runtime exists, else none, with the reason.
 */
export default async function setup(project: TestProject) {
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
  return containers.stop;
}
