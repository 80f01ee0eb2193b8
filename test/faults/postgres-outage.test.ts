import { afterAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN } from "../support/app.js";
import { tempDir, titled } from "../support/databases.js";
import { ServerProcess } from "../support/server-process.js";
import {
  accountWithAgents,
  call,
  isCut,
  isServiceUnavailable,
  Load,
  lostOrChanged,
  PrivatePostgres,
  privatePostgresSkipReason,
  sleep,
  upload,
} from "./support.js";

const skipReason = privatePostgresSkipReason();

/** /readyz's last answer once it says ready, or after `ms`. */
async function readyWithin(baseUrl: string, ms: number): Promise<unknown> {
  let last: unknown = null;
  for (const deadline = Date.now() + ms; Date.now() < deadline; await sleep(250)) {
    const ready = await call(baseUrl, "GET", "/readyz", "");
    last = isCut(ready) ? ready : ready.body;
    if (!isCut(ready) && ready.status === 200) break;
  }
  return last;
}

/**
 * Issue 20, point 3: PostgreSQL stopped (cleanly, then as by a crash) and started again under
 * load. Every answer is a success or 503 SERVICE_UNAVAILABLE with Retry-After, never a 500 nor a
 * cut connection; /readyz names the database meanwhile; the server recovers without a restart,
 * and every transfer it acknowledged comes back byte for byte.
 */
describe.skipIf(skipReason !== "")(titled("PostgreSQL away under load", skipReason), () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("answers 503 while it is away, recovers on its own, loses nothing acknowledged", async () => {
    const cluster = await PrivatePostgres.create();
    cleanups.push(() => cluster.destroy());
    const dir = tempDir("handoff-faults-pg-data-");
    cleanups.push(() => dir.remove());
    const server = await ServerProcess.start(
      { DATABASE_URL: cluster.url, DATA_DIR: dir.path, ADMIN_TOKEN },
      { readyTimeoutMs: 120_000, captureLog: true },
    );
    cleanups.push(() => server.kill("SIGTERM"));
    const keys = [await accountWithAgents(server.baseUrl), await accountWithAgents(server.baseUrl)];

    const load = new Load(server.baseUrl, keys);
    const readiness: unknown[] = [];
    try {
      for (const mode of ["fast", "immediate"] as const) {
        await sleep(1500);
        await cluster.stop(mode);
        // A larger upload begun while the database is away: answered, not cut off.
        const during = upload(server.baseUrl, keys[0] as string, [Buffer.alloc(2 * 1024 * 1024, 7)]);
        await sleep(1000);
        const ready = await call(server.baseUrl, "GET", "/readyz", "");
        readiness.push(
          isCut(ready)
            ? ready
            : { status: ready.status, details: (ready.body.error as { details?: unknown })?.details },
        );
        await sleep(1500);
        const duringOutcome = await during;
        load.outcomes.push({
          what: `2 MiB upload while PostgreSQL is away (${mode})`,
          outcome: duringOutcome,
        });
        await cluster.start();
      }
      await sleep(2000);
    } finally {
      await load.finish();
    }

    const failures = server.log.split("\n").filter((line) => line.includes('"level":50'));
    expect(load.unexpected(isServiceUnavailable), failures.slice(0, 3).join("\n")).toEqual([]);
    expect(load.count(500)).toBe(0);
    // The outages were felt (or this test proved nothing), and the database was named.
    expect(load.count(503)).toBeGreaterThan(0);
    for (const answer of readiness) {
      expect(answer).toMatchObject({
        status: 503,
        details: expect.arrayContaining([expect.objectContaining({ path: "database" })]),
      });
    }
    // Recovery without a restart: a new transfer goes through and /readyz is back to 200.
    const after = await upload(server.baseUrl, keys[0] as string, [Buffer.from("after the outage")]);
    expect(isCut(after) ? after.cut : after.status).toBe(201);
    expect(await readyWithin(server.baseUrl, 15_000)).toEqual({ status: "ready" });
    expect(load.acknowledged.length).toBeGreaterThan(0);
    expect(await lostOrChanged(server.baseUrl, load.acknowledged)).toEqual([]);
  }, 300_000);
});
