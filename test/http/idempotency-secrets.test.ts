import { readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.app.close().catch(() => {});
  await t.service.close().catch(() => {});
  rmSync(t.service.config.dataDir, { recursive: true, force: true });
});

/** Every file under `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every row of every table, as text. */
async function everyRow(): Promise<string> {
  const { rows: tables } = await t.service.db.raw<{ rows: { table_name: string }[] }>(
    "select table_name from information_schema.tables where table_schema = 'public' and table_type = 'BASE TABLE'",
  );
  const dumps = await Promise.all(
    tables.map(async ({ table_name }) => {
      const { rows } = await t.service.db.raw<{ rows: { row: string }[] }>(
        `select t::text as row from "${table_name}" t`,
      );
      return rows.map((row) => row.row).join("\n");
    }),
  );
  return dumps.join("\n");
}

/** Sends `body` twice with one Idempotency-Key; asserts the second is the same answer replayed. */
async function twice(url: string, key: string, body: unknown) {
  const headers = { "idempotency-key": `secret-${url}` };
  const first = await t.call("POST", url, { key, body, headers });
  expect(first.statusCode, first.body).toBe(201);
  const replay = await t.call("POST", url, { key, body, headers });
  expect(replay.statusCode).toBe(201);
  expect(replay.headers["idempotent-replayed"]).toBe("true");
  expect(replay.json()).toEqual(first.json());
  return first.json();
}

describe("secrets in replayable answers are not at rest in clear (finding 4)", () => {
  const secrets: string[] = [];

  it("POST /v1/admin/accounts, /v1/api-keys and two-step register replay the same secret", async () => {
    const account = await twice("/v1/admin/accounts", ADMIN_TOKEN, {
      email: "sealed@example.com",
      plan: "free",
    });
    const apiKey = account.api_key.api_key as string;
    const second = await twice("/v1/api-keys", apiKey, { name: "second" });
    const pending = await twice("/v1/agents/register", apiKey, { agent_id: "two-step" });
    secrets.push(apiKey, second.api_key as string, pending.connection_token as string);
    for (const secret of secrets) expect(secret.length).toBeGreaterThan(20);
  });

  it("no table holds any of them", async () => {
    const rows = await everyRow();
    expect(rows).toContain("secret-/v1/api-keys");
    for (const secret of secrets) expect(rows.includes(secret), secret.slice(0, 8)).toBe(false);
  });

  it("no file of the data directory holds any of them", async () => {
    await t.app.close();
    await t.service.close();
    const files = filesUnder(t.service.config.dataDir);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const content = readFileSync(file);
      for (const secret of secrets) expect(content.includes(secret), `${file} holds a secret`).toBe(false);
    }
  });
});
