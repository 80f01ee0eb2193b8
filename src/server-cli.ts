/**
 * The server's own commands (serve, accounts create, projections rebuild). src/cli.ts loads this
 * module only for them, so the client commands start without the server's dependencies.
 */

import { parseArgs } from "node:util";
import v8 from "node:v8";
import { projections } from "../projections/index.js";
import { UsageError } from "./cli-errors.js";
import { createAccount, defaultAccountName } from "./commands/accounts.js";
import { loadConfig } from "./config.js";
import { buildApp } from "./http/app.js";
import { presentAccount } from "./http/presenters.js";
import { DEFAULT_PLAN, PLAN_IDS } from "./plans/catalog.js";
import { findAccount } from "./queries/accounts.js";
import { openService } from "./service.js";

export const SERVER_USAGE = `Server commands:
  serve                                   run the HTTP server
  accounts create --email E [--name N] [--plan P]
                                          create an account; prints it and a first API key as JSON
  projections rebuild [name]              drop and rebuild read models from the event log
                                          (all when no name; names: ${projections.map((p) => p.name).join(", ")})`;

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
