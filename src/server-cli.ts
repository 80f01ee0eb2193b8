/**
 * The server's own commands (serve, accounts create, projections rebuild). src/cli.ts loads this
 * module only for them, so the client commands start without the server's dependencies.
 */

import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import v8 from "node:v8";
import { writePrivateFile } from "@handoff/sdk/private-file";
import type { Knex } from "knex";
import { DEFAULT_PLAN, PLAN_IDS } from "../domain/plans/catalog.js";
import { projections } from "../projections/index.js";
import { errorLine, UsageError } from "./cli-errors.js";
import { changePlan, createAccount, defaultAccountName } from "./command-handlers/accounts.js";
import { loadConfig } from "./config.js";
import { embeddedDirectory, migrate, openDatabase } from "./db/database.js";
import { announceServerUrl } from "./db/embedded-lock.js";
import type { EventStore, Position } from "./eventstore/port.js";
import { countEvents, PostgresEventStore } from "./eventstore/postgres.js";
import { buildApp } from "./http/app.js";
import { presentAccount } from "./http/presenters.js";
import { defaultWebRoot } from "./http/web-app.js";
import { progressLine } from "./progress-line.js";
import { findAccount, findAccountByEmail } from "./queries/accounts.js";
import { ProjectionEngine } from "./read-models/engine.js";
import { rebuildBeside } from "./read-models/rebuild-beside.js";
import { createAccountOnRunningServer } from "./running-server.js";
import { openService, type Service } from "./service.js";
import { startupLine } from "./startup-line.js";
import { tuneHeapForStreaming } from "./streaming-heap.js";
import { threadHashers } from "./transparency/leaf-hashes.js";

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
  const listening = await app.listen({ port: service.config.port, host: service.config.host });
  announceServerUrl(localUrl(app.server.address(), service.config.host));
  process.stderr.write(startupLine(service.config, listening, defaultWebRoot()));
}

/** Where a process on this machine reaches the server: a wildcard host is reached on loopback. */
function localUrl(address: string | AddressInfo | null, host: string): string {
  if (!address || typeof address === "string") return `http://${host}`;
  const reachable = ["0.0.0.0", "::", ""].includes(address.address) ? "127.0.0.1" : address.address;
  return `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${address.port}`;
}

export interface AccountsCreateOptions {
  email?: string;
  name?: string;
  plan?: string;
  out?: string;
  keepExisting?: boolean;
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function planOption(plan: string): string {
  if (!PLAN_IDS.includes(plan)) throw new UsageError(`--plan must be one of ${PLAN_IDS.join(", ")}`);
  return plan;
}

/**
 * `handoff accounts create --email E [--name N] [--plan P] [--out FILE [--keep-existing]]`: the
 * account and its first API key as JSON, on stdout or, with --out, into FILE (mode 0600, written
 * whole or not at all, never over an existing file; stdout then shows the account without the key).
 * Beside a running embedded server, the account is made through that server (its admin API).
 */
export async function accountsCreate(values: AccountsCreateOptions): Promise<void> {
  if (!values.email || !EMAIL.test(values.email)) throw new UsageError("--email E is required");
  const plan = planOption(values.plan ?? DEFAULT_PLAN);
  const out = values.out === undefined ? null : resolve(values.out);
  const config = loadConfig(process.env);
  const input = { email: values.email, name: values.name ?? defaultAccountName(values.email), plan };
  if (!(out && existsSync(out))) {
    const created = await createAccountOnRunningServer(config, input);
    if (created) return deliverAccount(created as { account: unknown }, out);
  }
  const service = await openService(config);
  try {
    if (out && existsSync(out)) {
      const kept = await keptAccountFile(service, out, values.email, values.keepExisting ?? false);
      console.error(`${out} already holds the account of ${kept.email} and its API key; kept it`);
      console.log(JSON.stringify({ file: out, account: kept, kept: true }, null, 2));
      return;
    }
    const result = await createAccount(service.deps, input, { kind: "admin", accountId: null, keyId: null });
    await service.engine.waitFor(result.position, 10_000);
    const account = await findAccount(service.db, service.deps.people, result.accountId);
    const { id, name, apiKey, createdAt } = result.apiKey;
    const answer = {
      account: account && presentAccount(account),
      api_key: { id, name, api_key: apiKey, created_at: createdAt },
    };
    await deliverAccount(answer, out);
  } finally {
    await service.close();
  }
}

/** The new account and its key: on stdout, or into `out` (0600, never over a file) with the account on stdout. */
async function deliverAccount(answer: { account: unknown }, out: string | null): Promise<void> {
  if (!out) {
    console.log(JSON.stringify(answer, null, 2));
    return;
  }
  try {
    await writePrivateFile(out, `${JSON.stringify(answer, null, 2)}\n`, { replace: false });
  } catch (error) {
    // The account exists now: its only key must not be lost with the file.
    console.log(JSON.stringify(answer, null, 2));
    throw new Error(
      `could not write ${out} (${errorLine(error)}); the account and its API key are printed above`,
    );
  }
  console.log(JSON.stringify({ file: out, account: answer.account }, null, 2));
}

/**
 * An existing --out FILE: with --keep-existing it is kept when it holds the account of `email` on
 * this server; otherwise (or without the flag) it is refused, never overwritten.
 */
async function keptAccountFile(service: Service, file: string, email: string, keepExisting: boolean) {
  const refuse = (why: string) =>
    new Error(`${file} already exists${why}; refusing to overwrite it (give another --out FILE)`);
  if (!keepExisting) throw refuse(" (--keep-existing keeps it when it holds this account)");
  let saved: { account?: { id?: string; email?: string } } | null = null;
  try {
    saved = JSON.parse(await readFile(file, "utf8"));
  } catch {
    throw refuse(" and is not an account file");
  }
  const account = saved?.account?.id
    ? await findAccount(service.db, service.deps.people, saved.account.id)
    : undefined;
  if (!account) throw refuse(" and holds an account this server does not know (another DATA_DIR?)");
  if (account.email.toLowerCase() !== email.toLowerCase())
    throw refuse(` and holds the account of ${account.email}, not ${email}`);
  return presentAccount(account);
}

/**
 * `handoff accounts plan --email E --plan P`: moves an account to another plan (the operator's
 * PATCH /v1/admin/accounts/{id}, without the server running); prints the account as JSON.
 */
export async function accountsPlan(values: { email?: string; plan?: string }): Promise<void> {
  if (!values.email || !EMAIL.test(values.email)) throw new UsageError("--email E is required");
  if (!values.plan) throw new UsageError(`--plan P is required (one of ${PLAN_IDS.join(", ")})`);
  const plan = planOption(values.plan);
  const service = await openService(loadConfig(process.env));
  try {
    const account = await findAccountByEmail(service.db, service.deps.people, values.email);
    if (!account)
      throw new Error(`no account has the address ${values.email} (handoff accounts create makes one)`);
    const result = await changePlan(service.deps, account.id, plan, {
      kind: "admin",
      accountId: null,
      keyId: null,
    });
    await service.engine.waitFor(result.position, 10_000);
    const changed = await findAccount(service.db, service.deps.people, account.id);
    console.log(JSON.stringify(changed && presentAccount(changed), null, 2));
  } finally {
    await service.close();
  }
}

/**
 * `handoff projections rebuild [NAME...]`: the named projections (all by default) rebuilt from the
 * log beside the live tables and switched in (src/read-models/rebuild-beside.ts): a server on the
 * same PostgreSQL database keeps serving throughout. Progress on a terminal; the result as JSON.
 */
export async function projectionsRebuild(names: string[]): Promise<void> {
  const chosen = names.length > 0 ? names : projections.map((p) => p.name);
  const unknown = chosen.filter((name) => !projections.some((p) => p.name === name));
  if (unknown.length > 0) throw new UsageError(`unknown projection: ${unknown.join(", ")}`);
  const config = loadConfig(process.env);
  const service = await openService(config, { runProjections: false });
  try {
    const started = Date.now();
    const total = config.eventStoreUrl ? null : await countEvents(service.db);
    const line = progressLine("events");
    let indexing = 0;
    await rebuildBeside(
      service.db,
      config.eventStoreUrl ? () => service.store : (on) => new PostgresEventStore(on),
      projections.filter((p) => chosen.includes(p.name)),
      (step) => {
        if (step.phase === "fill") line.update(step.events, total);
        else if (step.phase === "index") {
          indexing = Date.now();
          line.say(`building the indexes of ${step.tables} tables…`);
        } else if (step.phase === "switch" && step.attempt === 1) {
          line.say(`indexes built in ${seconds(indexing)} s; switching the rebuilt tables in…`);
        } else if (step.phase === "done") {
          line.end();
          const result = { projections: chosen, events: step.events, position: step.position };
          console.log(JSON.stringify({ ...result, seconds: Number(seconds(started)) }));
        }
      },
    );
  } finally {
    await service.close();
  }
}

const seconds = (since: number) => ((Date.now() - since) / 1000).toFixed(3);

/**
 * `handoff log check` (decisions 9.4): recomputes every leaf from the events as stored and compares
 * them with the tree and its signed checkpoints. Prints the result as JSON; exits 5 when the past
 * was rewritten, naming the first leaf that differs. Progress (events/s) on a terminal.
 */
export async function logCheck(): Promise<void> {
  const config = loadConfig(process.env);
  const service = await openService(config, { runProjections: false });
  // Events in PostgreSQL are read and hashed by threads of their own, one a CPU; PGlite has one
  // connection, and a KurrentDB log is read through the service's own store.
  const hashers = config.databaseUrl && !config.eventStoreUrl ? threadHashers(config.databaseUrl) : undefined;
  try {
    const started = Date.now();
    const line = progressLine("events");
    const result = await service.transparency.check({
      hashers,
      onProgress: ({ leaves, of }) => line.update(leaves, of),
    });
    line.end();
    const took = (Date.now() - started) / 1000;
    console.log(JSON.stringify({ ...result, seconds: Number(took.toFixed(3)) }));
    if (!result.ok) process.exitCode = 5;
  } finally {
    await hashers?.close();
    await service.close();
  }
}

/**
 * `handoff replay --until POSITION` (decisions 6.6): the read models as they were once the log
 * reached POSITION, built into a scratch schema of DATABASE_URL's database (PostgreSQL) or a scratch
 * data directory beside DATA_DIR's (embedded; stop the server first, PGlite is single-process),
 * for debugging. The live read models are not touched. Prints where to look, as JSON.
 */
export async function replay(values: { until?: string }): Promise<void> {
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
      const total = config.eventStoreUrl ? null : await countEvents(service.db, until);
      const started = Date.now();
      const line = progressLine("events");
      let applied = 0;
      await engine.rebuild(
        projections.map((p) => p.name),
        ({ events }) => {
          applied = events;
          line.update(events, total);
        },
      );
      line.end();
      const where = { ...whereToLook(target, until, applied), seconds: Number(seconds(started)) };
      console.log(JSON.stringify(where, null, 2));
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
      : openDatabase({ kind: "pglite", directory: embeddedDirectory(target.directory) });
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
