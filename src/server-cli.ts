/**
 * The server's own commands (serve, accounts create, projections rebuild). src/cli.ts loads this
 * module only for them, so the client commands start without the server's dependencies.
 */

import { join } from "node:path";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import type { Knex } from "knex";
import { projections } from "../projections/index.js";
import { UsageError } from "./cli-errors.js";
import { createAccount, defaultAccountName } from "./command-handlers/accounts.js";
import { loadConfig } from "./config.js";
import { migrate, openDatabase } from "./db/database.js";
import type { EventStore, Position } from "./eventstore/port.js";
import { buildApp } from "./http/app.js";
import { presentAccount } from "./http/presenters.js";
import { DEFAULT_PLAN, PLAN_IDS } from "./plans/catalog.js";
import { findAccount } from "./queries/accounts.js";
import { ProjectionEngine } from "./read-models/engine.js";
import { openService } from "./service.js";
import { tuneHeapForStreaming } from "./streaming-heap.js";

export const SERVER_USAGE = `Server commands:
  serve                                   run the HTTP server
  accounts create --email E [--name N] [--plan P]
                                          create an account; prints it and a first API key as JSON
  projections rebuild [name]              drop and rebuild read models from the event log
                                          (all when no name; names: ${projections.map((p) => p.name).join(", ")})
  replay --until POSITION                 build the read models as they were at POSITION into a
                                          scratch schema (PostgreSQL) or data directory (embedded)`;

/**
 * Streaming files churns through buffers while PGlite keeps a large heap: with V8's default heap
 * growth the server spent a quarter to a third of its time in full collections (bench/). A roomier
 * growth factor cut those from about 240 to 17 per 6 GiB moved. An internal V8 flag: re-check on
 * Node upgrades (npm run bench shows a regression).
 */
const HEAP_GROWTH_FLAG = "--heap-growing-percent=100";

/** How long SIGTERM/SIGINT lets in-flight requests finish before their connections are closed. */
const SHUTDOWN_GRACE_MS = 10_000;

export async function serve(): Promise<void> {
  v8.setFlagsFromString(HEAP_GROWTH_FLAG);
  tuneHeapForStreaming();
  const service = await openService(loadConfig(process.env));
  const app = await buildApp(service, { logger: true });
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, "shutting down: finishing in-flight requests");
    // app.close() stops accepting connections and waits for the requests in flight; past the
    // grace period whatever is still open (a stalled upload, a long-poll) is cut off.
    const cutOff = setTimeout(() => {
      app.log.warn({ graceMs: SHUTDOWN_GRACE_MS }, "grace period over: closing the remaining connections");
      app.server.closeAllConnections();
    }, SHUTDOWN_GRACE_MS);
    try {
      await app.close();
      clearTimeout(cutOff);
      await service.close();
      app.log.info("stopped");
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, "shutdown failed");
      process.exit(1);
    }
  };
  process.once("SIGINT", () => void shutdown("SIGINT"));
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  await app.listen({ port: service.config.port, host: service.config.host });
}

export async function accountsCreate(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { email: { type: "string" }, name: { type: "string" }, plan: { type: "string" } },
  });
  if (!values.email || !/^[^\s@]+@[^\s@]+$/.test(values.email)) throw new UsageError("--email E is required");
  const plan = values.plan ?? DEFAULT_PLAN;
  if (!PLAN_IDS.includes(plan)) throw new UsageError(`--plan must be one of ${PLAN_IDS.join(", ")}`);
  const service = await openService(loadConfig(process.env));
  try {
    const result = await createAccount(
      service.deps,
      { email: values.email, name: values.name ?? defaultAccountName(values.email), plan },
      { kind: "admin", accountId: null, keyId: null },
    );
    await service.engine.waitFor(result.position, 10_000);
    const account = await findAccount(service.db, service.deps.people, result.accountId);
    const { id, name, apiKey, createdAt } = result.apiKey;
    console.log(
      JSON.stringify(
        {
          account: account && presentAccount(account),
          api_key: { id, name, api_key: apiKey, created_at: createdAt },
        },
        null,
        2,
      ),
    );
  } finally {
    await service.close();
  }
}

export async function projectionsRebuild(args: string[]): Promise<void> {
  const names = args.length > 0 ? args : projections.map((p) => p.name);
  const unknown = names.filter((name) => !projections.some((p) => p.name === name));
  if (unknown.length > 0) throw new UsageError(`unknown projection: ${unknown.join(", ")}`);
  const service = await openService(loadConfig(process.env), { runProjections: false });
  try {
    const started = Date.now();
    await service.engine.rebuild(names, ({ projection, events, done }) => {
      const line = `${projection}: ${events} events${done ? ` rebuilt in ${((Date.now() - started) / 1000).toFixed(1)} s` : "…"}`;
      if (process.stderr.isTTY) process.stderr.write(`\r${line}${done ? "\n" : ""}`);
      else if (done) process.stderr.write(`${line}\n`);
    });
  } finally {
    await service.close();
  }
}

/**
 * `handoff replay --until POSITION` (decisions 6.6): the read models as they were once the log
 * reached POSITION, built into a scratch schema of DATABASE_URL's database (PostgreSQL) or a scratch
 * data directory beside DATA_DIR's (embedded; stop the server first, PGlite is single-process),
 * for debugging. The live read models are not touched. Prints where to look, as JSON.
 */
export async function replay(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { until: { type: "string" } } });
  const until = values.until;
  if (!until || !/^[\w.:-]{1,200}$/.test(until)) {
    throw new UsageError("--until POSITION is required (a position from history or the audit feed)");
  }
  const config = loadConfig(process.env);
  const service = await openService(config, { runProjections: false });
  const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
  const target: ScratchTarget = config.databaseUrl
    ? { kind: "schema", url: config.databaseUrl, schema: `replay_${stamp}` }
    : { kind: "directory", directory: join(config.dataDir, `replay-${stamp}`) };
  try {
    const scratch = await openScratch(service.db, target);
    try {
      const store = storeUntil(service.store, until);
      // A rebuild runs no subscription: nothing reports through onError.
      const engine = new ProjectionEngine(projections, store, scratch, () => {});
      let applied = 0;
      await engine.rebuild(
        projections.map((p) => p.name),
        ({ events }) => {
          applied = events;
        },
      );
      console.log(JSON.stringify(whereToLook(target, until, applied), null, 2));
    } finally {
      await scratch.destroy();
    }
  } finally {
    await service.close();
  }
}

type ScratchTarget =
  | { kind: "schema"; url: string; schema: string }
  | { kind: "directory"; directory: string };

async function openScratch(live: Knex, target: ScratchTarget): Promise<Knex> {
  if (target.kind === "schema") await live.raw("create schema ??", [target.schema]);
  const scratch =
    target.kind === "schema"
      ? openDatabase({ kind: "postgres", url: target.url, schema: target.schema })
      : openDatabase({ kind: "pglite", directory: join(target.directory, "pg") });
  await migrate(scratch);
  return scratch;
}

/** The log as it stood at `until`: reads stop there. Only what a rebuild uses is bounded. */
function storeUntil(store: EventStore, until: Position): EventStore {
  return {
    ...store,
    readAll: async (from, limit) => {
      if (from !== null && from >= until) return [];
      return (await store.readAll(from, limit)).filter((event) => event.position <= until);
    },
  };
}

function whereToLook(target: ScratchTarget, until: Position, events: number) {
  const tables = projections.flatMap((p) => p.tables);
  if (target.kind === "schema") {
    return {
      until,
      events,
      schema: target.schema,
      tables,
      look: `psql "$DATABASE_URL" -c 'set search_path to ${target.schema}; select * from transfers'`,
      drop: `psql "$DATABASE_URL" -c 'drop schema ${target.schema} cascade'`,
    };
  }
  const pg = join(target.directory, "pg");
  return {
    until,
    events,
    data_dir: target.directory,
    tables,
    look: `node --input-type=module -e "const { PGlite } = await import('@electric-sql/pglite'); console.log((await new PGlite('${pg}').query('select * from transfers')).rows)"`,
    drop: `rm -r '${target.directory}'`,
  };
}
