import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, expectError } from "./helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const register = (key: string, body: unknown, idempotencyKey?: string) =>
  t.call("POST", "/v1/agents/register", {
    key,
    body,
    ...(idempotencyKey ? { headers: { "idempotency-key": idempotencyKey } } : {}),
  });
const agentsOf = async (key: string) => {
  const res = await t.call("GET", "/v1/agents", { key });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { agents: { id: string; agent_id: string }[] }).agents;
};

/** Signs of internals that must never reach a client. */
const LEAKS = [
  /\bat .+:\d+:\d+/, // stack frame
  /\.(ts|js):\d+/,
  /node_modules/,
  /\b(select|insert into|update .+ set|delete from)\b/i,
  /\b(postgres|pglite|knex|jsonb|sqlstate|relation ")/i,
  /\\u0000/,
];

describe("error bodies", () => {
  it.each([
    ["GET", "/nope"],
    ["GET", "/v1/nothing-here"],
    ["POST", "/v1/agents/register/extra"],
    ["DELETE", "/v1/api-keys"],
  ])("unknown route %s %s → 404 NOT_FOUND error body, with or without a key", async (method, url) => {
    const { apiKey } = await t.newAccount();
    expectError(await t.call(method, url), 404, "NOT_FOUND");
    expectError(await t.call(method, url, { key: apiKey }), 404, "NOT_FOUND");
  });

  it("a body over the size limit → 413 in the one error body", async () => {
    const { apiKey } = await t.newAccount();
    const res = await register(apiKey, { agent_id: "big", metadata: { blob: "x".repeat(1100 * 1024) } });
    expectError(res, 413, "PAYLOAD_TOO_LARGE");
    expect(await agentsOf(apiKey)).toEqual([]);
  });

  it("a 500 carries the one error body and no stack trace or SQL", async () => {
    // A NUL character cannot be stored by PostgreSQL (jsonb/text): the store fails underneath.
    const { apiKey } = await t.newAccount();
    const res = await register(apiKey, { agent_id: "nul", public_key: randomPublicKey(), name: "a\u0000b" });
    expect([400, 500]).toContain(res.statusCode);
    if (res.statusCode === 500) {
      const error = expectError(res, 500, "INTERNAL_ERROR");
      expect(Object.keys(error).sort()).toEqual(["code", "message", "status"]);
    } else {
      expectError(res, 400, "VALIDATION_ERROR");
    }
    for (const leak of LEAKS) expect(res.body).not.toMatch(leak);
    // The service is still healthy and the account usable afterwards.
    expect((await t.call("GET", "/readyz")).statusCode).toBe(200);
    const ok = await register(apiKey, { agent_id: "after", public_key: randomPublicKey() });
    expect(ok.statusCode, ok.body).toBe(201);
  });
});

describe("health and documentation", () => {
  it("/healthz answers 200 without credentials", async () => {
    const res = await t.call("GET", "/healthz");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
  });

  it("/readyz answers 200 {status: ready} without credentials", async () => {
    const res = await t.call("GET", "/readyz");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ status: "ready" });
  });

  it("/docs/json is an OpenAPI 3.1 document listing POST /v1/agents/register", async () => {
    const { apiKey } = await t.newAccount();
    const res = await t.call("GET", "/docs/json", { key: apiKey });
    expect(res.statusCode, res.body).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.paths["/v1/agents/register"]).toHaveProperty("post");
    expect(doc.paths["/v1/agents/connect"]).toHaveProperty("post");
    expect(doc.paths["/v1/api-keys"]).toHaveProperty("post");
  });

  it("/docs/json is public: it needs no credentials", async () => {
    const res = await t.call("GET", "/docs/json");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().openapi).toMatch(/^3\.1\./);
  });
});

describe("Idempotency-Key", () => {
  it("the same key and body twice on register → the same 201 body, and only one agent exists", async () => {
    const { apiKey } = await t.newAccount();
    const body = { agent_id: "idem", public_key: randomPublicKey() };
    const first = await register(apiKey, body, "register-1");
    expect(first.statusCode, first.body).toBe(201);
    const second = await register(apiKey, body, "register-1");
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json()).toEqual(first.json());
    const agents = await agentsOf(apiKey);
    expect(agents.map((a) => a.id)).toEqual([first.json().id]);
  });

  it("a two-step register replayed returns the same connection token, which still works once", async () => {
    const { apiKey } = await t.newAccount();
    const first = await register(apiKey, { agent_id: "idem-two" }, "two-step-1");
    const second = await register(apiKey, { agent_id: "idem-two" }, "two-step-1");
    expect(second.statusCode).toBe(201);
    expect(second.json().connection_token).toBe(first.json().connection_token);
    const connected = await t.call("POST", "/v1/agents/connect", {
      key: first.json().connection_token,
      body: { public_key: randomPublicKey() },
    });
    expect(connected.statusCode, connected.body).toBe(200);
    expect(await agentsOf(apiKey)).toHaveLength(1);
  });

  it("the same key with another body → 409 IDEMPOTENCY_CONFLICT and no second effect", async () => {
    const { apiKey } = await t.newAccount();
    const first = await register(apiKey, { agent_id: "idem-a", public_key: randomPublicKey() }, "k-conflict");
    expect(first.statusCode, first.body).toBe(201);
    const res = await register(apiKey, { agent_id: "idem-b", public_key: randomPublicKey() }, "k-conflict");
    expectError(res, 409, "IDEMPOTENCY_CONFLICT");
    expect((await agentsOf(apiKey)).map((a) => a.agent_id)).toEqual(["idem-a"]);
  });

  it("the same key used by another account is independent", async () => {
    const one = await t.newAccount();
    const two = await t.newAccount();
    const body = { agent_id: "shared-slug", public_key: randomPublicKey() };
    const a = await register(one.apiKey, body, "shared-key");
    const b = await register(two.apiKey, body, "shared-key");
    expect(a.statusCode, a.body).toBe(201);
    expect(b.statusCode, b.body).toBe(201);
    expect(b.json().id).not.toBe(a.json().id);
    expect((await agentsOf(one.apiKey)).map((x) => x.id)).toEqual([a.json().id]);
    expect((await agentsOf(two.apiKey)).map((x) => x.id)).toEqual([b.json().id]);
    // And another body under that key is still that account's own business.
    const c = await register(two.apiKey, { agent_id: "other", public_key: randomPublicKey() }, "shared-key");
    expectError(c, 409, "IDEMPOTENCY_CONFLICT");
  });

  it("a replayed API key creation returns the same key and uses no second slot", async () => {
    const { apiKey } = await t.newAccount("free");
    const first = await t.call("POST", "/v1/api-keys", {
      key: apiKey,
      body: { name: "once" },
      headers: { "idempotency-key": "key-create-1" },
    });
    expect(first.statusCode, first.body).toBe(201);
    // Free allows 2 keys: a second real creation would be refused, the replay is not.
    const second = await t.call("POST", "/v1/api-keys", {
      key: apiKey,
      body: { name: "once" },
      headers: { "idempotency-key": "key-create-1" },
    });
    expect(second.statusCode, second.body).toBe(201);
    expect(second.json()).toEqual(first.json());
  });

  it("a key is remembered for 24 hours, then free again", async () => {
    const { apiKey } = await t.newAccount();
    const first = await register(apiKey, { agent_id: "day-1", public_key: randomPublicKey() }, "daily");
    expect(first.statusCode).toBe(201);
    await advanceClock(t, 23 * 3600);
    expectError(
      await register(apiKey, { agent_id: "day-2", public_key: randomPublicKey() }, "daily"),
      409,
      "IDEMPOTENCY_CONFLICT",
    );
    await advanceClock(t, 3600 + 1);
    const later = await register(apiKey, { agent_id: "day-2", public_key: randomPublicKey() }, "daily");
    expect(later.statusCode, later.body).toBe(201);
    expect((await agentsOf(apiKey)).map((a) => a.agent_id).sort()).toEqual(["day-1", "day-2"]);
  });

  it("records past their 24 hours are deleted by the housekeeping, answers and all", async () => {
    const { apiKey } = await t.newAccount();
    const answered = await register(
      apiKey,
      { agent_id: "pruned", public_key: randomPublicKey() },
      "prune-me",
    );
    expect(answered.statusCode).toBe(201);
    const stored = () => t.service.db("idempotency_records").where({ key: "prune-me" });
    expect(await stored()).toHaveLength(1);
    await advanceClock(t, 24 * 3600 + 1);
    await t.service.housekeeper.sweep();
    expect(await stored()).toHaveLength(0);
  });

  it("an empty or over-long Idempotency-Key → 400 VALIDATION_ERROR", async () => {
    const { apiKey } = await t.newAccount();
    const body = { agent_id: "k", public_key: randomPublicKey() };
    expectError(await register(apiKey, body, "x".repeat(256)), 400, "VALIDATION_ERROR");
    const empty = await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body,
      headers: { "idempotency-key": "" },
    });
    expectError(empty, 400, "VALIDATION_ERROR");
    expect(await agentsOf(apiKey)).toEqual([]);
  });
});

describe("/readyz names what is missing", () => {
  it("answers 503 NOT_READY naming the blob store when file storage fails", async () => {
    const t = await startTestApp();
    try {
      const ping = t.service.blobs.ping.bind(t.service.blobs);
      t.service.blobs.ping = async () => {
        throw new Error("disk gone");
      };
      const res = await t.call("GET", "/readyz");
      expect(res.statusCode).toBe(503);
      expect(res.json().error).toMatchObject({
        code: "NOT_READY",
        status: 503,
        details: [{ path: "blob_store" }],
      });
      t.service.blobs.ping = ping;
      expect((await t.call("GET", "/readyz")).statusCode).toBe(200);
    } finally {
      await t.close();
    }
  });
});
