import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { detailPaths, expectError, registerAgent } from "./helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uniqueEmail = (local = "admin") => `${local}-${randomBytes(4).toString("hex")}@example.com`;
const createAccount = (body: unknown, key = ADMIN_TOKEN) =>
  t.call("POST", "/v1/admin/accounts", { key, body });
const patchAccount = (id: string, body: unknown, key = ADMIN_TOKEN) =>
  t.call("PATCH", `/v1/admin/accounts/${id}`, { key, body });

describe("POST /v1/admin/accounts", () => {
  it("201 {account, api_key} with plan free by default; the key works", async () => {
    const email = uniqueEmail();
    const res = await createAccount({ email, name: "Acme Robotics" });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(["account", "api_key"]);
    expect(Object.keys(body.account).sort()).toEqual(["created_at", "email", "id", "kind", "name", "plan"]);
    expect(Object.keys(body.api_key).sort()).toEqual(["api_key", "created_at", "id", "name"]);
    expect(body.account).toMatchObject({ email, name: "Acme Robotics", plan: "free" });
    expect(body.account.id).toMatch(UUID);
    expect(Number.isNaN(Date.parse(body.account.created_at))).toBe(false);
    expect(body.api_key.id).toMatch(UUID);
    expect(body.api_key.api_key).toMatch(/^hnd_/);
    expect(typeof body.api_key.name).toBe("string");
    expect(Number.isNaN(Date.parse(body.api_key.created_at))).toBe(false);

    const listed = await t.call("GET", "/v1/agents", { key: body.api_key.api_key });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json()).toEqual({ agents: [] });
  });

  it("takes the plan it is given", async () => {
    const res = await createAccount({ email: uniqueEmail(), plan: "team" });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().account.plan).toBe("team");
    expect(typeof res.json().account.name).toBe("string");
  });

  it("409 ACCOUNT_EXISTS for an e-mail already used, whatever its letter case", async () => {
    const local = `Case-${randomBytes(4).toString("hex")}`;
    expect((await createAccount({ email: `${local}@Example.com` })).statusCode).toBe(201);
    expectError(await createAccount({ email: `${local}@Example.com` }), 409, "ACCOUNT_EXISTS");
    const res = await createAccount({ email: `${local.toLowerCase()}@EXAMPLE.COM` });
    expectError(res, 409, "ACCOUNT_EXISTS");
    expect(res.body).not.toContain("hnd_");
  });

  it.each([
    ["a bad email", { email: "not-an-email" }, "email"],
    ["a missing email", { name: "No Mail" }, "email"],
    ["an unknown plan", { email: "plan@example.com", plan: "platinum" }, "plan"],
  ])("400 VALIDATION_ERROR for %s", async (_label, body, path) => {
    const error = expectError(await createAccount(body), 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toContain(path);
  });

  it("401 with a wrong admin token, without a token and with an API key", async () => {
    expectError(await createAccount({ email: uniqueEmail() }, `${ADMIN_TOKEN}x`), 401, "UNAUTHORIZED");
    expectError(await createAccount({ email: uniqueEmail() }, ""), 401, "UNAUTHORIZED");
    const { apiKey } = await t.newAccount();
    const email = uniqueEmail();
    expectError(await createAccount({ email }, apiKey), 401, "UNAUTHORIZED");
    // Nothing was created by the refused calls: the address is still free.
    expect((await createAccount({ email })).statusCode).toBe(201);
  });
});

describe("PATCH /v1/admin/accounts/{id}", () => {
  it("a plan change raises the agent limit: a builder account can register a 3rd agent", async () => {
    const { apiKey, accountId, email } = await t.newAccount("free");
    await registerAgent(t, apiKey, { agent_id: "a1" });
    await registerAgent(t, apiKey, { agent_id: "a2" });
    const third = { agent_id: "a3", public_key: randomPublicKey() };
    expectError(
      await t.call("POST", "/v1/agents/register", { key: apiKey, body: third }),
      403,
      "QUOTA_EXCEEDED",
    );

    const res = await patchAccount(accountId, { plan: "builder" });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(["created_at", "email", "id", "kind", "name", "plan"]);
    expect(body).toMatchObject({ id: accountId, email, plan: "builder" });

    const registered = await t.call("POST", "/v1/agents/register", { key: apiKey, body: third });
    expect(registered.statusCode, registered.body).toBe(201);
  });

  it("a plan change raises the API key limit too", async () => {
    const { apiKey, accountId } = await t.newAccount("free");
    expect((await t.call("POST", "/v1/api-keys", { key: apiKey, body: { name: "2" } })).statusCode).toBe(201);
    expectError(
      await t.call("POST", "/v1/api-keys", { key: apiKey, body: { name: "3" } }),
      403,
      "KEY_LIMIT_REACHED",
    );
    expect((await patchAccount(accountId, { plan: "builder" })).statusCode).toBe(200);
    expect((await t.call("POST", "/v1/api-keys", { key: apiKey, body: { name: "3" } })).statusCode).toBe(201);
  });

  it("404 NOT_FOUND for an unknown account", async () => {
    expectError(await patchAccount(randomUUID(), { plan: "builder" }), 404, "NOT_FOUND");
    expectError(await patchAccount("not-a-uuid", { plan: "builder" }), 404, "NOT_FOUND");
  });

  it("400 VALIDATION_ERROR for an unknown or missing plan", async () => {
    const { accountId } = await t.newAccount();
    expect(
      detailPaths(expectError(await patchAccount(accountId, { plan: "gold" }), 400, "VALIDATION_ERROR")),
    ).toContain("plan");
    expectError(await patchAccount(accountId, {}), 400, "VALIDATION_ERROR");
  });

  it("401 with an API key, even the account's own", async () => {
    const { apiKey, accountId } = await t.newAccount();
    expectError(await patchAccount(accountId, { plan: "enterprise" }, apiKey), 401, "UNAUTHORIZED");
    expectError(
      await patchAccount(accountId, { plan: "enterprise" }, "wrong-admin-token-123"),
      401,
      "UNAUTHORIZED",
    );
  });
});

describe("POST /v1/admin/clock", () => {
  it("returns now moved forward by advance_seconds; new records carry the moved time", async () => {
    const before = await t.call("POST", "/v1/admin/clock", {
      key: ADMIN_TOKEN,
      body: { advance_seconds: 0 },
    });
    expect(before.statusCode, before.body).toBe(200);
    expect(Object.keys(before.json())).toEqual(["now"]);
    const start = Date.parse(before.json().now);

    const res = await t.call("POST", "/v1/admin/clock", {
      key: ADMIN_TOKEN,
      body: { advance_seconds: 86400 },
    });
    expect(res.statusCode, res.body).toBe(200);
    const moved = Date.parse(res.json().now);
    expect(moved - start).toBeGreaterThanOrEqual(86400 * 1000);
    expect(moved - start).toBeLessThan(86400 * 1000 + 60_000);

    const created = await createAccount({ email: uniqueEmail("clock") });
    expect(Date.parse(created.json().account.created_at)).toBeGreaterThanOrEqual(moved);
  });

  it("400 for a negative or non-integer advance, 401 without the admin token", async () => {
    expectError(
      await t.call("POST", "/v1/admin/clock", { key: ADMIN_TOKEN, body: { advance_seconds: -5 } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await t.call("POST", "/v1/admin/clock", { key: ADMIN_TOKEN, body: { advance_seconds: "soon" } }),
      400,
      "VALIDATION_ERROR",
    );
    const { apiKey } = await t.newAccount();
    expectError(
      await t.call("POST", "/v1/admin/clock", { key: apiKey, body: { advance_seconds: 1 } }),
      401,
      "UNAUTHORIZED",
    );
  });
});

describe("without ADMIN_TOKEN", () => {
  let bare: TestApp;
  beforeAll(async () => {
    bare = await startTestApp({ env: { ADMIN_TOKEN: "" } });
  });
  afterAll(async () => bare?.close());

  it.each([
    ["POST", "/v1/admin/accounts", { email: "someone@example.com" }],
    ["PATCH", `/v1/admin/accounts/${randomUUID()}`, { plan: "builder" }],
    ["POST", "/v1/admin/clock", { advance_seconds: 60 }],
  ])("%s %s answers 404 NOT_FOUND, with or without a token", async (method, url, body) => {
    expectError(await bare.call(method, url, { key: ADMIN_TOKEN, body }), 404, "NOT_FOUND");
    expectError(await bare.call(method, url, { body }), 404, "NOT_FOUND");
  });

  it("the rest of the API still runs", async () => {
    expect((await bare.call("GET", "/healthz")).statusCode).toBe(200);
    expectError(await bare.call("GET", "/v1/agents"), 401, "UNAUTHORIZED");
  });
});
