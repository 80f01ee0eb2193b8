import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { createAccount } from "../../src/command-handlers/accounts.js";
import { loadConfig } from "../../src/config.js";
import { openService } from "../../src/service.js";
import { ADMIN_TOKEN } from "../support/app.js";
import { onEmbeddedAndPostgres } from "../support/process-suites.js";
import { dumpReadModels } from "../support/read-models.js";
import { runCli, ServerProcess } from "../support/server-process.js";

const json = { "content-type": "application/json" };

async function post(baseUrl: string, path: string, key: string, body: unknown) {
  return fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { ...json, authorization: `Bearer ${key}` },
    body: JSON.stringify(body),
  }).catch(() => null);
}

/** Opens the stores without running projections and reports which projections lag the log. */
async function lagging(env: Record<string, string>): Promise<string[]> {
  const service = await openService(loadConfig(env), { runProjections: false });
  try {
    const { rows } = await service.db.raw<{ rows: { name: string; position: string | null }[] }>(
      "select name, position from projection_checkpoints",
    );
    const head = await service.store.headPosition();
    const positions = new Map(rows.map((row) => [row.name, row.position]));
    return service.engine.projections
      .map((p) => p.name)
      .filter((name) => head !== null && (positions.get(name) ?? "") < head);
  } finally {
    await service.close();
  }
}

async function appendWithoutProjecting(env: Record<string, string>): Promise<void> {
  const service = await openService(loadConfig(env), { runProjections: false });
  try {
    const email = `unprojected-${randomBytes(4).toString("hex")}@example.com`;
    await createAccount(
      service.deps,
      { email, name: "unprojected", plan: "free" },
      { kind: "admin", accountId: null, keyId: null },
    );
  } finally {
    await service.close();
  }
}

async function readModelsOf(env: Record<string, string>) {
  const service = await openService(loadConfig(env), { runProjections: false });
  try {
    return await dumpReadModels(service.db);
  } finally {
    await service.close();
  }
}

/**
 * SIGKILL while writes are in flight, until one kill lands after an append and before its
 * projection; the restarted server must then bring every read model to what a rebuild gives.
 */
async function crashAndRecover(env: Record<string, string>) {
  let behind: string[] = [];
  for (let attempt = 1; attempt <= 3 && behind.length === 0; attempt++) {
    const server = await ServerProcess.start(env);
    const created = await post(server.baseUrl, "/v1/admin/accounts", ADMIN_TOKEN, {
      email: `crash-${randomBytes(4).toString("hex")}@example.com`,
      plan: "scale",
    });
    if (!created) throw new Error("the server did not answer the account creation");
    const apiKey = ((await created.json()) as { api_key: { api_key: string } }).api_key.api_key;
    // The kill comes once the first registration is answered, with the rest of the burst in flight:
    // a timer alone lands before any write on a loaded machine.
    let firstAnswered: () => void = () => {};
    const answered = new Promise<void>((resolve) => {
      firstAnswered = resolve;
    });
    const burst = Array.from({ length: 60 }, (_, i) =>
      post(server.baseUrl, "/v1/agents/register", apiKey, { agent_id: `a${attempt}-${i}` }).then((r) => {
        firstAnswered();
        return r;
      }),
    );
    await answered;
    await new Promise((resolve) => setTimeout(resolve, attempt * 5));
    await server.kill("SIGKILL");
    await Promise.all(burst);
    behind = await lagging(env);
  }
  if (behind.length === 0) {
    // Projections that keep up closely leave the window narrow: make sure one crash lands in it, as
    // a process that appended and died before projecting would leave the log.
    await appendWithoutProjecting(env);
    behind = await lagging(env);
  }
  expect(behind.length, "no crash left the projections behind the log").toBeGreaterThan(0);

  const restarted = await ServerProcess.start(env);
  await restarted.kill("SIGTERM");
  const recovered = await readModelsOf(env);
  expect(recovered.agents?.length).toBeGreaterThan(0);

  const rebuild = runCli(["projections", "rebuild"], env);
  expect(rebuild.status, rebuild.stderr).toBe(0);
  const rebuilt = JSON.parse(rebuild.stdout) as { projections: string[]; events: number };
  expect(rebuilt.projections).toContain("agents");
  expect(rebuilt.events).toBeGreaterThan(0);
  expect(await readModelsOf(env)).toEqual(recovered);
}

onEmbeddedAndPostgres(
  "crash recovery",
  "read models after a SIGKILL and restart equal a rebuild from the log",
  crashAndRecover,
  240_000,
);
