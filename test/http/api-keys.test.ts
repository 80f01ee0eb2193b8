import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { detailPaths, expectError, registerAgent, wellFormedUnknownKey } from "./helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface IssuedKey {
  id: string;
  name: string;
  api_key: string;
  created_at: string;
}

const createKey = (key: string, body: unknown) => t.call("POST", "/v1/api-keys", { key, body });
const createAccountKey = (key: string, accountId: string, body?: unknown) =>
  t.call("POST", `/v1/accounts/${accountId}/api-keys`, { key, ...(body !== undefined ? { body } : {}) });
const revoke = (key: string, accountId: string, keyId: string) =>
  t.call("DELETE", `/v1/accounts/${accountId}/api-keys/${keyId}`, { key });

/** The key answers an authenticated request. */
async function works(key: string): Promise<boolean> {
  const res = await t.call("GET", "/v1/agents", { key });
  if (res.statusCode === 200) return true;
  expectError(res, 401, "UNAUTHORIZED");
  return false;
}

function expectIssuedKey(body: IssuedKey, name: string) {
  expect(Object.keys(body).sort()).toEqual(["api_key", "created_at", "id", "name"]);
  expect(body.id).toMatch(UUID);
  expect(body.name).toBe(name);
  expect(body.api_key).toMatch(/^hnd_[0-9A-Za-z]+$/);
  expect(Number.isNaN(Date.parse(body.created_at))).toBe(false);
}

describe("POST /v1/api-keys", () => {
  it("201 with {id, name, api_key, created_at}; the new key works on the same account", async () => {
    const { apiKey } = await t.newAccount();
    const res = await createKey(apiKey, { name: "ci runner" });
    expect(res.statusCode, res.body).toBe(201);
    const issued = res.json() as IssuedKey;
    expectIssuedKey(issued, "ci runner");
    expect(issued.api_key).not.toBe(apiKey);

    // Same account: what one key registers, the other sees.
    const agent = await registerAgent(t, issued.api_key, { agent_id: "via-new-key" });
    const listed = await t.call("GET", "/v1/agents", { key: apiKey });
    expect(listed.json().agents.map((a: { id: string }) => a.id)).toEqual([agent.id]);
  });

  it("KEY_LIMIT_REACHED 403 at the free plan's 3rd key, and no 3rd key is made", async () => {
    const { apiKey } = await t.newAccount("free");
    expect((await createKey(apiKey, { name: "second" })).statusCode).toBe(201);
    const res = await createKey(apiKey, { name: "third" });
    expectError(res, 403, "KEY_LIMIT_REACHED");
    expect(res.body).not.toContain("hnd_");
  });

  it("a builder account may hold more than 2 keys", async () => {
    const { apiKey } = await t.newAccount("builder");
    for (const name of ["k2", "k3", "k4"]) {
      const res = await createKey(apiKey, { name });
      expect(res.statusCode, res.body).toBe(201);
    }
  });

  it.each([
    ["missing name", {}],
    ["empty name", { name: "" }],
    ["name over 200", { name: "n".repeat(201) }],
    ["name not a string", { name: 7 }],
  ])("%s → 400 VALIDATION_ERROR naming the field", async (_label, body) => {
    const { apiKey } = await t.newAccount();
    const error = expectError(await createKey(apiKey, body), 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toContain("name");
  });

  it("401 without a key, with a malformed key and with an unknown key", async () => {
    expectError(await createKey("", { name: "x" }), 401, "UNAUTHORIZED");
    expectError(await createKey("hnd_nope", { name: "x" }), 401, "UNAUTHORIZED");
    expectError(await createKey(wellFormedUnknownKey(), { name: "x" }), 401, "UNAUTHORIZED");
  });

  it("415 for a non-JSON body", async () => {
    const { apiKey } = await t.newAccount();
    const res = await t.call("POST", "/v1/api-keys", {
      key: apiKey,
      body: "name=x",
      headers: { "content-type": "text/plain" },
    });
    expectError(res, 415, "UNSUPPORTED_MEDIA_TYPE");
  });
});

describe("POST /v1/accounts/{account_id}/api-keys", () => {
  it("201 on the caller's own account; the key works", async () => {
    const { apiKey, accountId } = await t.newAccount();
    const res = await createAccountKey(apiKey, accountId, { name: "deploy" });
    expect(res.statusCode, res.body).toBe(201);
    const issued = res.json() as IssuedKey;
    expectIssuedKey(issued, "deploy");
    expect(await works(issued.api_key)).toBe(true);
  });

  it("name is optional: an empty object gets a default name", async () => {
    const { apiKey, accountId } = await t.newAccount();
    const res = await createAccountKey(apiKey, accountId, {});
    expect(res.statusCode, res.body).toBe(201);
    const issued = res.json() as IssuedKey;
    expect(issued.name.length).toBeGreaterThan(0);
    expect(await works(issued.api_key)).toBe(true);
  });

  it("name is optional: no body at all gets a default name", async () => {
    const { apiKey, accountId } = await t.newAccount();
    const res = await createAccountKey(apiKey, accountId);
    expect(res.statusCode, res.body).toBe(201);
    expect((res.json() as IssuedKey).name.length).toBeGreaterThan(0);
  });

  it("counts toward the same plan limit as POST /v1/api-keys", async () => {
    const { apiKey, accountId } = await t.newAccount("free");
    expect((await createAccountKey(apiKey, accountId, { name: "second" })).statusCode).toBe(201);
    expectError(await createAccountKey(apiKey, accountId, { name: "third" }), 403, "KEY_LIMIT_REACHED");
    expectError(await createKey(apiKey, { name: "third" }), 403, "KEY_LIMIT_REACHED");
  });

  it("another account's id → 403 FORBIDDEN, and no key is made for it", async () => {
    const mine = await t.newAccount("free");
    const theirs = await t.newAccount("free");
    const res = await createAccountKey(mine.apiKey, theirs.accountId, { name: "sneaky" });
    expectError(res, 403, "FORBIDDEN");
    expect(res.body).not.toContain("hnd_");
    // Their slot is still free: they can still make their 2nd key.
    expect((await createKey(theirs.apiKey, { name: "second" })).statusCode).toBe(201);
  });

  it("an account id that does not exist → 403 FORBIDDEN", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await createAccountKey(apiKey, randomUUID(), { name: "x" }), 403, "FORBIDDEN");
  });

  it("401 without a key", async () => {
    const { accountId } = await t.newAccount();
    expectError(await createAccountKey("", accountId, { name: "x" }), 401, "UNAUTHORIZED");
  });
});

describe("DELETE /v1/accounts/{account_id}/api-keys/{key_id}", () => {
  it("200 status revoked; the revoked key answers 401 on its very next request", async () => {
    const { apiKey, accountId } = await t.newAccount();
    const issued = (await createKey(apiKey, { name: "doomed" })).json() as IssuedKey;
    expect(await works(issued.api_key)).toBe(true);

    const res = await revoke(apiKey, accountId, issued.id);
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(["id", "name", "revoked_at", "status"]);
    expect(body).toMatchObject({ id: issued.id, name: "doomed", status: "revoked" });
    expect(Number.isNaN(Date.parse(body.revoked_at))).toBe(false);

    expectError(await t.call("GET", "/v1/agents", { key: issued.api_key }), 401, "UNAUTHORIZED");
    expectError(await createKey(issued.api_key, { name: "revenge" }), 401, "UNAUTHORIZED");
    // The other key of the account is untouched.
    expect(await works(apiKey)).toBe(true);
  });

  it("a key can revoke itself; its next request is 401", async () => {
    const { apiKey, accountId, keyId } = await t.newAccount();
    expect((await revoke(apiKey, accountId, keyId)).statusCode).toBe(200);
    expect(await works(apiKey)).toBe(false);
  });

  it("revoking frees a slot under the plan limit", async () => {
    const { apiKey, accountId } = await t.newAccount("free");
    const second = (await createKey(apiKey, { name: "second" })).json() as IssuedKey;
    expectError(await createKey(apiKey, { name: "third" }), 403, "KEY_LIMIT_REACHED");
    expect((await revoke(apiKey, accountId, second.id)).statusCode).toBe(200);
    const again = await createKey(apiKey, { name: "replacement" });
    expect(again.statusCode, again.body).toBe(201);
    expect(await works((again.json() as IssuedKey).api_key)).toBe(true);
  });

  it("revoking the same key twice frees only one slot", async () => {
    const { apiKey, accountId } = await t.newAccount("free");
    const second = (await createKey(apiKey, { name: "second" })).json() as IssuedKey;
    expect((await revoke(apiKey, accountId, second.id)).statusCode).toBe(200);
    const twice = await revoke(apiKey, accountId, second.id);
    if (twice.statusCode === 200) expect(twice.json().status).toBe("revoked");
    else expectError(twice, 404, "NOT_FOUND");
    expect(await works(second.api_key)).toBe(false);
    expect((await createKey(apiKey, { name: "second again" })).statusCode).toBe(201);
    expectError(await createKey(apiKey, { name: "third" }), 403, "KEY_LIMIT_REACHED");
  });

  it("an unknown key → 404 NOT_FOUND", async () => {
    const { apiKey, accountId } = await t.newAccount();
    expectError(await revoke(apiKey, accountId, randomUUID()), 404, "NOT_FOUND");
    expectError(await revoke(apiKey, accountId, "not-a-uuid"), 404, "NOT_FOUND");
  });

  it("another account's key on the caller's own path → 404, and that key keeps working", async () => {
    const mine = await t.newAccount();
    const theirs = await t.newAccount();
    expectError(await revoke(mine.apiKey, mine.accountId, theirs.keyId), 404, "NOT_FOUND");
    expect(await works(theirs.apiKey)).toBe(true);
  });

  it("another account's path → 403 FORBIDDEN, and their key keeps working", async () => {
    const mine = await t.newAccount();
    const theirs = await t.newAccount();
    expectError(await revoke(mine.apiKey, theirs.accountId, theirs.keyId), 403, "FORBIDDEN");
    expect(await works(theirs.apiKey)).toBe(true);
  });

  it("401 without a key; a revoked key cannot revoke", async () => {
    const { apiKey, accountId, keyId } = await t.newAccount();
    expectError(await revoke("", accountId, keyId), 401, "UNAUTHORIZED");
    const second = (await createKey(apiKey, { name: "second" })).json() as IssuedKey;
    expect((await revoke(apiKey, accountId, second.id)).statusCode).toBe(200);
    expectError(await revoke(second.api_key, accountId, keyId), 401, "UNAUTHORIZED");
    expect(await works(apiKey)).toBe(true);
  });
});

describe("GET /v1/api-keys", () => {
  it("lists the account's keys in use, oldest first, without the keys themselves; revoked keys drop out", async () => {
    const { apiKey, accountId, keyId } = await t.newAccount("builder");
    const other = await t.newAccount();
    const second = (await createKey(apiKey, { name: "deploy" })).json() as IssuedKey;
    const list = async () => (await t.call("GET", "/v1/api-keys", { key: apiKey })).json().api_keys;

    const listed = await list();
    expect(listed.map((k: IssuedKey) => [k.id, k.name])).toEqual([
      [keyId, expect.any(String)],
      [second.id, "deploy"],
    ]);
    expect(Object.keys(listed[1]).sort()).toEqual(["created_at", "id", "name"]);
    expect(JSON.stringify(listed)).not.toContain("hnd_");

    expect((await revoke(apiKey, accountId, second.id)).statusCode).toBe(200);
    expect((await list()).map((k: IssuedKey) => k.id)).toEqual([keyId]);
    // Another account sees only its own.
    const theirs = (await t.call("GET", "/v1/api-keys", { key: other.apiKey })).json().api_keys;
    expect(theirs.map((k: IssuedKey) => k.id)).toEqual([other.keyId]);
  });

  it("401 without credentials", async () => {
    expectError(await t.call("GET", "/v1/api-keys"), 401, "UNAUTHORIZED");
  });
});
