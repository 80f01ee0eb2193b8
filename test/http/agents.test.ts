import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import {
  advanceClock,
  allKeys,
  detailPaths,
  expectError,
  registerAgent,
  registerPending,
  wellFormedUnknownKey,
} from "./helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const LIST_ITEM_KEYS = [
  "agent_id",
  "agent_type",
  "connection_status",
  "created_at",
  "description",
  "id",
  "key_version",
  "last_seen_at",
  "metadata",
  "name",
  "webhook_status",
  "webhook_url",
];
const FULL_AGENT_KEYS = [
  ...LIST_ITEM_KEYS,
  "public_key",
  "public_key_algorithm",
  "signing_public_key",
  "signing_key_algorithm",
  // Decisions 9.6: the log's proof of the keys (null until a checkpoint covers their leaf).
  "key_proof",
].sort();
const PATCH_RESPONSE_KEYS = [
  "agent_id",
  "agent_type",
  "connection_status",
  "created_at",
  "description",
  "id",
  "metadata",
  "name",
  "webhook_status",
  "webhook_url",
];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const register = (key: string, body: unknown) => t.call("POST", "/v1/agents/register", { key, body });
const listAgents = async (key: string) => {
  const res = await t.call("GET", "/v1/agents", { key });
  expect(res.statusCode, res.body).toBe(200);
  return (res.json() as { agents: Record<string, unknown>[] }).agents;
};
const connect = (token: string, body: unknown) => t.call("POST", "/v1/agents/connect", { key: token, body });

describe("POST /v1/agents/register", () => {
  it("one-shot: 201, connected at key_version 1, key echoed, no two-step fields, no private key", async () => {
    const { apiKey } = await t.newAccount();
    const publicKey = randomPublicKey();
    const res = await register(apiKey, { agent_id: "one.shot_1-a", public_key: publicKey, name: "One" });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(
      [
        "agent_id",
        "claim_code",
        "connection_status",
        "connection_token",
        "created_at",
        "id",
        "inbox_url",
        "key_version",
        "message",
        "name",
        "public_key",
        "token_expires_at",
      ].sort(),
    );
    expect(body.id).toMatch(UUID);
    expect(body.agent_id).toBe("one.shot_1-a");
    expect(body.name).toBe("One");
    expect(body.connection_status).toBe("connected");
    expect(body.key_version).toBe(1);
    expect(body.public_key).toBe(publicKey);
    expect(body.connection_token).toBeNull();
    expect(body.claim_code).toBeNull();
    expect(body.token_expires_at).toBeNull();
    expect(body.inbox_url.startsWith("http://127.0.0.1:8080")).toBe(true);
    expect(Number.isNaN(Date.parse(body.created_at))).toBe(false);
    expect(typeof body.message).toBe("string");
    expect(allKeys(body).filter((key) => /private|secret/i.test(key))).toEqual([]);
    expect(res.body.toLowerCase()).not.toContain("private");
  });

  it("two-step: 201 pending, no key fields at all, hct_ token, ADR- claim code, 1 hour expiry", async () => {
    const { apiKey } = await t.newAccount();
    const res = await register(apiKey, { agent_id: "two-step" });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body.connection_status).toBe("pending");
    expect(body).not.toHaveProperty("key_version");
    expect(body).not.toHaveProperty("public_key");
    expect(body.connection_token).toMatch(/^hct_/);
    expect(body.claim_code).toMatch(/^ADR-[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    expect(Date.parse(body.token_expires_at) - Date.parse(body.created_at)).toBe(3600 * 1000);
    expect(body.inbox_url.startsWith("http://127.0.0.1:8080")).toBe(true);
    expect(allKeys(body).filter((key) => /private|secret/i.test(key))).toEqual([]);

    // The pending agent reads the same way afterwards: no key fields.
    const got = await t.call("GET", `/v1/agents/${body.id}`, { key: apiKey });
    expect(got.statusCode, got.body).toBe(200);
    expect(got.json().connection_status).toBe("pending");
    expect(got.json()).not.toHaveProperty("key_version");
    expect(got.json()).not.toHaveProperty("public_key");
  });

  it("each two-step registration gets its own token and claim code", async () => {
    const { apiKey } = await t.newAccount();
    const a = await registerPending(t, apiKey, "pa");
    const b = await registerPending(t, apiKey, "pb");
    expect(a.connection_token).not.toBe(b.connection_token);
    expect(a.claim_code).not.toBe(b.claim_code);
  });

  it("keeps the optional fields it is given", async () => {
    const { apiKey } = await t.newAccount();
    const signing = randomPublicKey();
    const created = await registerAgent(t, apiKey, {
      agent_id: "full",
      name: "Full",
      description: "does things",
      webhook_url: "https://example.com/hook",
      agent_type: "langchain",
      metadata: { team: "blue", n: 3 },
      signing_public_key: signing,
    });
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got).toMatchObject({
      agent_id: "full",
      name: "Full",
      description: "does things",
      webhook_url: "https://example.com/hook",
      agent_type: "langchain",
      metadata: { team: "blue", n: 3 },
      signing_public_key: signing,
      signing_key_algorithm: "Ed25519",
      public_key_algorithm: "X25519",
    });
  });

  describe("INVALID_PUBLIC_KEY", () => {
    it.each([
      ["not base64", "this is not base64!!"],
      ["31 bytes", randomBytes(31).toString("base64")],
      ["33 bytes", randomBytes(33).toString("base64")],
      ["empty", ""],
    ])("public_key %s → 400, nothing registered", async (_label, publicKey) => {
      const { apiKey } = await t.newAccount();
      const res = await register(apiKey, { agent_id: "k", public_key: publicKey });
      expectError(res, 400, "INVALID_PUBLIC_KEY");
      expect(await listAgents(apiKey)).toEqual([]);
    });

    it("a bad signing_public_key → 400, nothing registered", async () => {
      const { apiKey } = await t.newAccount();
      const res = await register(apiKey, {
        agent_id: "k",
        public_key: randomPublicKey(),
        signing_public_key: randomBytes(16).toString("base64"),
      });
      expectError(res, 400, "INVALID_PUBLIC_KEY");
      expect(await listAgents(apiKey)).toEqual([]);
    });
  });

  describe("VALIDATION_ERROR", () => {
    it.each([
      ["missing agent_id", { public_key: "K" }, "agent_id"],
      ["agent_id with a slash", { agent_id: "a/b" }, "agent_id"],
      ["agent_id with a space", { agent_id: "a b" }, "agent_id"],
      ["agent_id with a non-ASCII letter", { agent_id: "agént" }, "agent_id"],
      ["empty agent_id", { agent_id: "" }, "agent_id"],
      ["65-character agent_id", { agent_id: "a".repeat(65) }, "agent_id"],
      ["agent_id not a string", { agent_id: 42 }, "agent_id"],
      ["name over 200", { agent_id: "v", name: "n".repeat(201) }, "name"],
      ["description over 4000", { agent_id: "v", description: "d".repeat(4001) }, "description"],
      ["metadata over 16 KB", { agent_id: "v", metadata: { blob: "m".repeat(16 * 1024) } }, "metadata"],
      ["metadata not an object", { agent_id: "v", metadata: ["x"] }, "metadata"],
      [
        "public_key_algorithm not X25519",
        { agent_id: "v", public_key_algorithm: "RSA" },
        "public_key_algorithm",
      ],
      [
        "signing_key_algorithm not Ed25519",
        { agent_id: "v", signing_key_algorithm: "RSA" },
        "signing_key_algorithm",
      ],
      ["unknown agent_type", { agent_id: "v", agent_type: "skynet" }, "agent_type"],
    ])("%s → 400 naming the field, nothing registered", async (_label, body, path) => {
      const { apiKey } = await t.newAccount();
      const payload = { ...body } as Record<string, unknown>;
      if (payload.public_key === "K") payload.public_key = randomPublicKey();
      const error = expectError(await register(apiKey, payload), 400, "VALIDATION_ERROR");
      expect(detailPaths(error)).toContain(path);
      expect(await listAgents(apiKey)).toEqual([]);
    });

    it("accepts the limits themselves: 64-character agent_id, 200-character name, 4000-character description", async () => {
      const { apiKey } = await t.newAccount();
      const res = await register(apiKey, {
        agent_id: "a".repeat(64),
        public_key: randomPublicKey(),
        name: "n".repeat(200),
        description: "d".repeat(4000),
      });
      expect(res.statusCode, res.body).toBe(201);
    });

    it("a name with a NUL character is refused as invalid input, not a 500", async () => {
      const { apiKey } = await t.newAccount();
      const res = await register(apiKey, {
        agent_id: "nul",
        public_key: randomPublicKey(),
        name: "a\u0000b",
      });
      expectError(res, 400, "VALIDATION_ERROR");
    });
  });

  it("AGENT_ID_TAKEN: the same slug twice on one account → 409; another account may use it", async () => {
    const { apiKey } = await t.newAccount();
    await registerAgent(t, apiKey, { agent_id: "dup" });
    expectError(
      await register(apiKey, { agent_id: "dup", public_key: randomPublicKey() }),
      409,
      "AGENT_ID_TAKEN",
    );
    // A pending agent holds its slug too.
    await registerPending(t, apiKey, "pending-dup");
    expectError(await register(apiKey, { agent_id: "pending-dup" }), 409, "AGENT_ID_TAKEN");
    expect(await listAgents(apiKey)).toHaveLength(2);

    const other = await t.newAccount();
    await registerAgent(t, other.apiKey, { agent_id: "dup" });
  });

  it("QUOTA_EXCEEDED: the free plan's 3rd agent → 403", async () => {
    const { apiKey } = await t.newAccount("free");
    await registerAgent(t, apiKey, { agent_id: "q1" });
    await registerPending(t, apiKey, "q2");
    expectError(
      await register(apiKey, { agent_id: "q3", public_key: randomPublicKey() }),
      403,
      "QUOTA_EXCEEDED",
    );
    expect((await listAgents(apiKey)).map((a) => a.agent_id).sort()).toEqual(["q1", "q2"]);
  });

  describe("401 UNAUTHORIZED", () => {
    it("without an Authorization header", async () => {
      expectError(await register("", { agent_id: "x", public_key: randomPublicKey() }), 401, "UNAUTHORIZED");
    });

    it.each([
      ["a short hnd_ key", "hnd_abc"],
      ["a key without the prefix", "sk_live_0123456789abcdef0123456789abcdef"],
      ["a key with a broken checksum", `hnd_${"A".repeat(46)}`],
    ])("with %s", async (_label, key) => {
      expectError(await register(key, { agent_id: "x", public_key: randomPublicKey() }), 401, "UNAUTHORIZED");
    });

    it("with a non-Bearer scheme", async () => {
      const { apiKey } = await t.newAccount();
      const res = await t.call("POST", "/v1/agents/register", {
        headers: { authorization: `Basic ${apiKey}` },
        body: { agent_id: "x", public_key: randomPublicKey() },
      });
      expectError(res, 401, "UNAUTHORIZED");
      expect(await listAgents(apiKey)).toEqual([]);
    });

    it("with a well-formed key nobody holds", async () => {
      expectError(
        await register(wellFormedUnknownKey(), { agent_id: "x", public_key: randomPublicKey() }),
        401,
        "UNAUTHORIZED",
      );
    });
  });

  it("415 UNSUPPORTED_MEDIA_TYPE for a text/plain body", async () => {
    const { apiKey } = await t.newAccount();
    const res = await t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: JSON.stringify({ agent_id: "x", public_key: randomPublicKey() }),
      headers: { "content-type": "text/plain" },
    });
    expectError(res, 415, "UNSUPPORTED_MEDIA_TYPE");
    expect(await listAgents(apiKey)).toEqual([]);
  });

  const invalidJson = (apiKey: string) =>
    t.call("POST", "/v1/agents/register", {
      key: apiKey,
      body: '{"agent_id": "x",',
      headers: { "content-type": "application/json" },
    });

  it("400 VALIDATION_ERROR for a body that is not valid JSON", async () => {
    const { apiKey } = await t.newAccount();
    const res = await invalidJson(apiKey);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ code: "VALIDATION_ERROR", status: 400 });
    expect(typeof res.json().error.message).toBe("string");
    expect(await listAgents(apiKey)).toEqual([]);
  });

  it("the invalid-JSON VALIDATION_ERROR carries a details list like every VALIDATION_ERROR", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await invalidJson(apiKey), 400, "VALIDATION_ERROR");
  });

  it("400 VALIDATION_ERROR for a JSON body that is not an object", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await register(apiKey, ["agent_id"]), 400, "VALIDATION_ERROR");
  });
});

describe("POST /v1/agents/connect", () => {
  it("connects a pending agent with its token: 200, connected, key_version 1, key stored", async () => {
    const { apiKey } = await t.newAccount();
    const pending = await registerPending(t, apiKey, "connector");
    const publicKey = randomPublicKey();
    const signing = randomPublicKey();
    const res = await connect(pending.connection_token, {
      public_key: publicKey,
      signing_public_key: signing,
    });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(["agent_id", "key_version", "message", "status"]);
    expect(body).toMatchObject({ agent_id: "connector", status: "connected", key_version: 1 });
    expect(typeof body.message).toBe("string");

    const got = (await t.call("GET", `/v1/agents/${pending.id}`, { key: apiKey })).json();
    expect(got).toMatchObject({
      connection_status: "connected",
      key_version: 1,
      public_key: publicKey,
      signing_public_key: signing,
    });
  });

  it("a token used once → 401 on reuse, and the first key stays", async () => {
    const { apiKey } = await t.newAccount();
    const pending = await registerPending(t, apiKey, "once");
    const first = randomPublicKey();
    expect((await connect(pending.connection_token, { public_key: first })).statusCode).toBe(200);
    expectError(
      await connect(pending.connection_token, { public_key: randomPublicKey() }),
      401,
      "UNAUTHORIZED",
    );
    const got = (await t.call("GET", `/v1/agents/${pending.id}`, { key: apiKey })).json();
    expect(got.public_key).toBe(first);
  });

  it.each([
    ["garbage", "garbage"],
    ["an hct_ token of the wrong shape", "hct_garbage"],
    [
      "a well-shaped token nobody was given",
      `hct_${randomUUID().replaceAll("-", "")}_${randomBytes(32).toString("base64url")}`,
    ],
  ])("%s → 401", async (_label, token) => {
    expectError(await connect(token, { public_key: randomPublicKey() }), 401, "UNAUTHORIZED");
  });

  it("a tampered token (right agent, wrong secret) → 401 and the agent stays pending", async () => {
    const { apiKey } = await t.newAccount();
    const pending = await registerPending(t, apiKey, "tamper");
    const prefix = pending.connection_token.slice(0, pending.connection_token.lastIndexOf("_") + 1);
    const forged = `${prefix}${randomBytes(32).toString("base64url")}`;
    expectError(await connect(forged, { public_key: randomPublicKey() }), 401, "UNAUTHORIZED");
    const got = (await t.call("GET", `/v1/agents/${pending.id}`, { key: apiKey })).json();
    expect(got.connection_status).toBe("pending");
  });

  it("without a token → 401", async () => {
    expectError(
      await t.call("POST", "/v1/agents/connect", { body: { public_key: randomPublicKey() } }),
      401,
      "UNAUTHORIZED",
    );
  });

  it("an API key instead of a token → 401", async () => {
    const { apiKey } = await t.newAccount();
    await registerPending(t, apiKey, "wants-token");
    expectError(await connect(apiKey, { public_key: randomPublicKey() }), 401, "UNAUTHORIZED");
  });

  it("still works just before the hour is up, and an expired token → 401 leaving the agent pending", async () => {
    const { apiKey } = await t.newAccount();
    const early = await registerPending(t, apiKey, "early");
    const late = await registerPending(t, apiKey, "late");
    await advanceClock(t, 3500);
    expect((await connect(early.connection_token, { public_key: randomPublicKey() })).statusCode).toBe(200);
    await advanceClock(t, 101);
    expectError(await connect(late.connection_token, { public_key: randomPublicKey() }), 401, "UNAUTHORIZED");
    const got = (await t.call("GET", `/v1/agents/${late.id}`, { key: apiKey })).json();
    expect(got.connection_status).toBe("pending");
  });

  it("a token whose agent was deleted → 401", async () => {
    const { apiKey } = await t.newAccount();
    const pending = await registerPending(t, apiKey, "gone");
    expect((await t.call("DELETE", `/v1/agents/${pending.id}`, { key: apiKey })).statusCode).toBe(200);
    expectError(
      await connect(pending.connection_token, { public_key: randomPublicKey() }),
      401,
      "UNAUTHORIZED",
    );
  });

  it("a bad public key → 400 INVALID_PUBLIC_KEY and the token stays usable", async () => {
    const { apiKey } = await t.newAccount();
    const pending = await registerPending(t, apiKey, "badkey");
    expectError(
      await connect(pending.connection_token, { public_key: randomBytes(31).toString("base64") }),
      400,
      "INVALID_PUBLIC_KEY",
    );
    expectError(
      await connect(pending.connection_token, { public_key: randomPublicKey(), signing_public_key: "nope" }),
      400,
      "INVALID_PUBLIC_KEY",
    );
    const res = await connect(pending.connection_token, { public_key: randomPublicKey() });
    expect(res.statusCode, res.body).toBe(200);
  });

  it("a missing public_key → 400 VALIDATION_ERROR", async () => {
    const { apiKey } = await t.newAccount();
    const pending = await registerPending(t, apiKey, "nokey");
    const error = expectError(await connect(pending.connection_token, {}), 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toContain("public_key");
  });
});

describe("GET /v1/agents", () => {
  it("lists the caller's agents without public key fields", async () => {
    const { apiKey } = await t.newAccount();
    const connected = await registerAgent(t, apiKey, { agent_id: "l1", name: "L1" });
    const pending = await registerPending(t, apiKey, "l2");
    const agents = await listAgents(apiKey);
    expect(agents.map((a) => a.id).sort()).toEqual([connected.id, pending.id].sort());
    const first = agents.find((a) => a.id === connected.id);
    expect(Object.keys(first ?? {}).sort()).toEqual(LIST_ITEM_KEYS);
    expect(first).toMatchObject({
      agent_id: "l1",
      name: "L1",
      connection_status: "connected",
      key_version: 1,
    });
    const second = agents.find((a) => a.id === pending.id);
    expect(second).toMatchObject({ agent_id: "l2", connection_status: "pending" });
    expect(second).not.toHaveProperty("key_version");
    for (const agent of agents) {
      expect(agent).not.toHaveProperty("public_key");
      expect(agent).not.toHaveProperty("signing_public_key");
    }
  });

  it("shows only the caller's own agents", async () => {
    const mine = await t.newAccount();
    const theirs = await t.newAccount();
    await registerAgent(t, mine.apiKey, { agent_id: "mine" });
    await registerAgent(t, theirs.apiKey, { agent_id: "theirs" });
    expect((await listAgents(mine.apiKey)).map((a) => a.agent_id)).toEqual(["mine"]);
    expect((await listAgents(theirs.apiKey)).map((a) => a.agent_id)).toEqual(["theirs"]);
  });

  it("401 without a key and with an unknown key", async () => {
    expectError(await t.call("GET", "/v1/agents"), 401, "UNAUTHORIZED");
    expectError(await t.call("GET", "/v1/agents", { key: wellFormedUnknownKey() }), 401, "UNAUTHORIZED");
  });
});

describe("GET /v1/agents/{id}", () => {
  it("returns the full agent with its public keys", async () => {
    const { apiKey } = await t.newAccount();
    const publicKey = randomPublicKey();
    const created = await registerAgent(t, apiKey, { agent_id: "get-me", public_key: publicKey });
    const res = await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(FULL_AGENT_KEYS);
    expect(body).toMatchObject({
      id: created.id,
      agent_id: "get-me",
      name: null,
      description: null,
      webhook_url: null,
      agent_type: "custom",
      connection_status: "connected",
      public_key: publicKey,
      public_key_algorithm: "X25519",
      signing_public_key: null,
      signing_key_algorithm: "Ed25519",
      key_version: 1,
      last_seen_at: null,
      metadata: {},
    });
  });

  it("another account's agent → 403 FORBIDDEN", async () => {
    const owner = await t.newAccount();
    const stranger = await t.newAccount();
    const created = await registerAgent(t, owner.apiKey, { agent_id: "private-agent" });
    const error = expectError(
      await t.call("GET", `/v1/agents/${created.id}`, { key: stranger.apiKey }),
      403,
      "FORBIDDEN",
    );
    expect(JSON.stringify(error)).not.toContain(created.public_key);
  });

  it("an unknown uuid → 404, a non-uuid → 404", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await t.call("GET", `/v1/agents/${randomUUID()}`, { key: apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("GET", "/v1/agents/not-a-uuid", { key: apiKey }), 404, "NOT_FOUND");
  });

  it("401 without a key", async () => {
    const { apiKey } = await t.newAccount();
    const created = await registerAgent(t, apiKey, { agent_id: "anon" });
    expectError(await t.call("GET", `/v1/agents/${created.id}`), 401, "UNAUTHORIZED");
  });
});

describe("PATCH /v1/agents/{id}", () => {
  async function seeded(apiKey: string) {
    return registerAgent(t, apiKey, {
      agent_id: "patchy",
      name: "Before",
      description: "old description",
      webhook_url: "https://example.com/old",
      agent_type: "crewai",
      metadata: { a: 1, b: { c: 2 } },
    });
  }
  const patch = (key: string, id: string, body: unknown) =>
    t.call("PATCH", `/v1/agents/${id}`, { key, body });

  it("changes only the fields given", async () => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    const res = await patch(apiKey, created.id, { name: "After" });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(PATCH_RESPONSE_KEYS);
    expect(body).toMatchObject({
      id: created.id,
      agent_id: "patchy",
      name: "After",
      description: "old description",
      webhook_url: "https://example.com/old",
      agent_type: "crewai",
      connection_status: "connected",
      metadata: { a: 1, b: { c: 2 } },
    });
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got).toMatchObject({ name: "After", description: "old description", agent_type: "crewai" });
    expect(got.public_key).toBe(created.public_key);
    expect(got.key_version).toBe(1);

    const typed = await patch(apiKey, created.id, { agent_type: "n8n", description: "new" });
    expect(typed.statusCode, typed.body).toBe(200);
    expect(typed.json()).toMatchObject({ name: "After", agent_type: "n8n", description: "new" });
  });

  it("replaces metadata entirely", async () => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    const res = await patch(apiKey, created.id, { metadata: { z: true } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().metadata).toEqual({ z: true });
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got.metadata).toEqual({ z: true });
  });

  it("an empty body changes nothing", async () => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    const res = await patch(apiKey, created.id, {});
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: "Before", metadata: { a: 1, b: { c: 2 } } });
  });

  it("an unknown agent_type → 400 VALIDATION_ERROR, nothing changed", async () => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    const error = expectError(
      await patch(apiKey, created.id, { agent_type: "skynet", name: "Changed" }),
      400,
      "VALIDATION_ERROR",
    );
    expect(detailPaths(error)).toContain("agent_type");
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got).toMatchObject({ agent_type: "crewai", name: "Before" });
  });

  it.each([
    ["name over 200", { name: "n".repeat(201) }],
    ["description over 4000", { description: "d".repeat(4001) }],
    ["metadata over 16 KB", { metadata: { blob: "m".repeat(16 * 1024) } }],
    ["metadata not an object", { metadata: "x" }],
  ])("%s → 400 VALIDATION_ERROR", async (_label, body) => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    expectError(await patch(apiKey, created.id, body), 400, "VALIDATION_ERROR");
  });

  it.each([
    ["public_key", () => ({ public_key: randomPublicKey() })],
    ["signing_public_key", () => ({ signing_public_key: randomPublicKey() })],
    ["agent_id", () => ({ agent_id: "renamed" })],
  ])("%s in the body → 400, the agent is unchanged (immutable)", async (_label, makeBody) => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    expectError(await patch(apiKey, created.id, makeBody()), 400, "VALIDATION_ERROR");
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got.public_key).toBe(created.public_key);
    expect(got.signing_public_key).toBeNull();
    expect(got.agent_id).toBe("patchy");
  });

  it("another account's agent → 403 FORBIDDEN, unchanged", async () => {
    const owner = await t.newAccount();
    const stranger = await t.newAccount();
    const created = await seeded(owner.apiKey);
    expectError(await patch(stranger.apiKey, created.id, { name: "Hijacked" }), 403, "FORBIDDEN");
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: owner.apiKey })).json();
    expect(got.name).toBe("Before");
  });

  it("unknown agent → 404 NOT_FOUND", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await patch(apiKey, randomUUID(), { name: "x" }), 404, "NOT_FOUND");
    expectError(await patch(apiKey, "nope", { name: "x" }), 404, "NOT_FOUND");
  });

  it("401 without a key", async () => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    expectError(await patch("", created.id, { name: "x" }), 401, "UNAUTHORIZED");
  });

  it.each([
    ["text/plain", '{"name":"x"}'],
    ["application/x-www-form-urlencoded", "name=x"],
    ["application/xml", "<name>x</name>"],
  ])("Content-Type %s → 415 UNSUPPORTED_MEDIA_TYPE, unchanged", async (contentType, payload) => {
    const { apiKey } = await t.newAccount();
    const created = await seeded(apiKey);
    const res = await t.call("PATCH", `/v1/agents/${created.id}`, {
      key: apiKey,
      body: payload,
      headers: { "content-type": contentType },
    });
    expectError(res, 415, "UNSUPPORTED_MEDIA_TYPE");
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got.name).toBe("Before");
  });
});

describe("DELETE /v1/agents/{id}", () => {
  it("answers 200 with the agent, now disconnected", async () => {
    const { apiKey } = await t.newAccount();
    const created = await registerAgent(t, apiKey, { agent_id: "bye", name: "Bye" });
    const res = await t.call("DELETE", `/v1/agents/${created.id}`, { key: apiKey });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(FULL_AGENT_KEYS);
    expect(body).toMatchObject({
      id: created.id,
      agent_id: "bye",
      name: "Bye",
      connection_status: "disconnected",
      key_version: 1,
    });
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got.connection_status).toBe("disconnected");
  });

  it("frees the slug: registering it again gives key_version 2 (key rotation)", async () => {
    const { apiKey } = await t.newAccount();
    const first = await registerAgent(t, apiKey, { agent_id: "rotor" });
    expect((await t.call("DELETE", `/v1/agents/${first.id}`, { key: apiKey })).statusCode).toBe(200);
    const newKey = randomPublicKey();
    const second = await registerAgent(t, apiKey, { agent_id: "rotor", public_key: newKey });
    expect(second.id).not.toBe(first.id);
    expect(second.key_version).toBe(2);
    expect(second.public_key).toBe(newKey);
    const got = (await t.call("GET", `/v1/agents/${second.id}`, { key: apiKey })).json();
    expect(got).toMatchObject({ key_version: 2, connection_status: "connected", public_key: newKey });

    // A two-step re-registration connects at the next version too.
    expect((await t.call("DELETE", `/v1/agents/${second.id}`, { key: apiKey })).statusCode).toBe(200);
    const third = await registerPending(t, apiKey, "rotor");
    const connected = await connect(third.connection_token, { public_key: randomPublicKey() });
    expect(connected.statusCode, connected.body).toBe(200);
    expect(connected.json().key_version).toBe(3);
  });

  it("a disconnected agent no longer counts toward the plan's agent limit", async () => {
    const { apiKey } = await t.newAccount("free");
    const a = await registerAgent(t, apiKey, { agent_id: "c1" });
    await registerAgent(t, apiKey, { agent_id: "c2" });
    expectError(
      await register(apiKey, { agent_id: "c3", public_key: randomPublicKey() }),
      403,
      "QUOTA_EXCEEDED",
    );
    expect((await t.call("DELETE", `/v1/agents/${a.id}`, { key: apiKey })).statusCode).toBe(200);
    await registerAgent(t, apiKey, { agent_id: "c3" });
  });

  it("a disconnected agent cannot be changed any more", async () => {
    const { apiKey } = await t.newAccount();
    const created = await registerAgent(t, apiKey, { agent_id: "frozen", name: "Frozen" });
    expect((await t.call("DELETE", `/v1/agents/${created.id}`, { key: apiKey })).statusCode).toBe(200);
    const res = await t.call("PATCH", `/v1/agents/${created.id}`, { key: apiKey, body: { name: "Thawed" } });
    expect(res.statusCode).toBeGreaterThanOrEqual(400);
    expect(res.statusCode).toBeLessThan(500);
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: apiKey })).json();
    expect(got.name).toBe("Frozen");
  });

  it("another account's agent → 403 FORBIDDEN, still connected", async () => {
    const owner = await t.newAccount();
    const stranger = await t.newAccount();
    const created = await registerAgent(t, owner.apiKey, { agent_id: "keep" });
    expectError(
      await t.call("DELETE", `/v1/agents/${created.id}`, { key: stranger.apiKey }),
      403,
      "FORBIDDEN",
    );
    const got = (await t.call("GET", `/v1/agents/${created.id}`, { key: owner.apiKey })).json();
    expect(got.connection_status).toBe("connected");
  });

  it("unknown agent → 404 NOT_FOUND; 401 without a key", async () => {
    const { apiKey } = await t.newAccount();
    expectError(await t.call("DELETE", `/v1/agents/${randomUUID()}`, { key: apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("DELETE", "/v1/agents/xyz", { key: apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("DELETE", `/v1/agents/${randomUUID()}`), 401, "UNAUTHORIZED");
  });
});
