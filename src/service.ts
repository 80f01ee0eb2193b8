import { join } from "node:path";
import type { Knex } from "knex";
import { projections } from "../projections/index.js";
import { AdjustableClock, type Clock, systemClock } from "./clock.js";
import type { CommandDeps } from "./commands/deps.js";
import type { Config } from "./config.js";
import { migrate, openDatabase } from "./db/database.js";
import { KurrentEventStore } from "./eventstore/kurrent.js";
import type { EventStore } from "./eventstore/port.js";
import { PostgresEventStore } from "./eventstore/postgres.js";
import { ProjectionEngine } from "./read-models/engine.js";
import { loadServerKey } from "./security/server-key.js";

/** Everything a running Handoff holds, wired from the configuration: the composition root. */
export interface Service {
  config: Config;
  db: Knex;
  store: EventStore;
  engine: ProjectionEngine;
  clock: Clock;
  /** Present only with TEST_CLOCK=1. */
  testClock: AdjustableClock | null;
  deps: CommandDeps;
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** Start the projectors (the CLI's rebuild runs them itself). */
  runProjections?: boolean;
  onProjectionError?: (error: unknown) => void;
}

export async function openService(config: Config, options: ServiceOptions = {}): Promise<Service> {
  const db = openDatabase(
    config.databaseUrl
      ? { kind: "postgres", url: config.databaseUrl }
      : { kind: "pglite", directory: join(config.dataDir, "pg") },
  );
  await migrate(db);
  const store: EventStore = config.eventStoreUrl
    ? await KurrentEventStore.connect(config.eventStoreUrl)
    : new PostgresEventStore(db);
  const testClock = config.testClock ? new AdjustableClock() : null;
  const clock = testClock ?? systemClock;
  const serverKey = loadServerKey(config.serverKey, config.dataDir);
  const onError = options.onProjectionError ?? ((error) => console.error("projection failed:", error));
  const engine = new ProjectionEngine(projections, store, db, onError);
  if (options.runProjections ?? true) await engine.start();

  return {
    config,
    db,
    store,
    engine,
    clock,
    testClock,
    deps: { store, clock, serverKey },
    async close() {
      await engine.stop();
      await store.close();
      await db.destroy();
    },
  };
}
