import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
import { ADMIN_TOKEN, randomPublicKey, startTestApp, type TestApp } from "../support/app.js";
import { dumpReadModels } from "../support/read-models.js";
import { detailPaths, expectError, registerAgent, registerPending } from "./helpers.js";

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => t.close());

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BROADCAST_KEYS = [
  "affected_components",
  "agent_count",
  "content",
  "created_at",
  "id",
  "severity",
  "title",
];

interface Broadcast {
  id: string;
  title: string;
  content: string;
  severity: string;
  affected_components: string[];
  agent_count: number;
  created_at: string;
}
interface Page {
  broadcasts: Broadcast[];
  total: number;
  limit: number;
  offset: number;
  has_more: boolean;
}

const agentHeader = (agent?: string): Record<string, string> => (agent ? { "x-service-agent": agent } : {});

const publishRaw = (body: unknown, key = ADMIN_TOKEN) =>
  t.call("POST", "/v1/admin/broadcasts", { key, body });

async function publish(body: Record<string, unknown> = {}): Promise<Broadcast> {
  const res = await publishRaw({ title: "Notice", content: "Body", severity: "info", ...body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as Broadcast;
}

const listRaw = (key: string, query = "", agent?: string) =>
  t.call("GET", `/v1/broadcasts${query}`, { key, headers: agentHeader(agent) });

async function list(key: string, query = "", agent?: string): Promise<Page> {
  const res = await listRaw(key, query, agent);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as Page;
}

const unreadIds = async (key: string, agent?: string) =>
  (await list(key, "?limit=100", agent)).broadcasts.map((b) => b.id);

const read = (key: string, id: string, agent?: string) =>
  t.call("PUT", `/v1/broadcasts/${id}/read`, { key, headers: agentHeader(agent) });

/** A fresh account with connected agents under the given slugs, oldest first. */
async function accountWith<Slug extends string>(...slugs: Slug[]) {
  const account = await t.newAccount("builder");
  const agents = {} as Record<Slug, string>;
  for (const slug of slugs) agents[slug] = (await registerAgent(t, account.apiKey, { agent_id: slug })).id;
  return { ...account, agents };
}

async function liveAgentCount(): Promise<number> {
  const [row] = await t.service
    .db("agents")
    .whereNot({ connection_status: "disconnected" })
    .count<{ count: string | number }[]>({ count: "*" });
  return Number(row?.count);
}

async function deliveredTo(broadcastId: string): Promise<string[]> {
  const rows: { agent_id: string }[] = await t.service
    .db("broadcast_deliveries")
    .where({ broadcast_id: broadcastId })
    .select("agent_id");
  return rows.map((row) => row.agent_id).sort();
}

describe("POST /v1/admin/broadcasts", () => {
  it("201 with the Broadcast of spec 2.5, delivered by default to every agent not disconnected, on every account", async () => {
    const a = await accountWith("alpha");
    const pending = await registerPending(t, a.apiKey, "beta");
    const gone = await registerAgent(t, a.apiKey, { agent_id: "gamma" });
    expect((await t.call("DELETE", `/v1/agents/${gone.id}`, { key: a.apiKey })).statusCode).toBe(200);
    const b = await accountWith("delta");

    const res = await publishRaw({
      title: "Maintenance tonight",
      content: "# Heads up\n\nUploads pause **22:00–22:30 UTC**.",
      severity: "action_required",
      affected_components: ["uploads", "api"],
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json() as Broadcast;
    expect(Object.keys(body).sort()).toEqual(BROADCAST_KEYS);
    expect(body).toMatchObject({
      title: "Maintenance tonight",
      content: "# Heads up\n\nUploads pause **22:00–22:30 UTC**.",
      severity: "action_required",
      affected_components: ["uploads", "api"],
    });
    expect(body.id).toMatch(UUID);
    expect(Number.isNaN(Date.parse(body.created_at))).toBe(false);
    expect(body.agent_count).toBe(await liveAgentCount());

    const delivered = await deliveredTo(body.id);
    expect(delivered).toHaveLength(body.agent_count);
    expect(delivered).toEqual(expect.arrayContaining([a.agents.alpha, pending.id, b.agents.delta]));
    expect(delivered).not.toContain(gone.id);

    expect(await unreadIds(a.apiKey, "alpha")).toContain(body.id);
    expect(await unreadIds(b.apiKey)).toContain(body.id);
  });

  it("a pending agent it was delivered to sees it once connected", async () => {
    const a = await accountWith("first");
    const pending = await registerPending(t, a.apiKey, "later");
    const broadcast = await publish({ title: "For the pending one", agent_ids: [pending.id] });
    expect(broadcast.agent_count).toBe(1);
    expectError(await listRaw(a.apiKey, "", "later"), 404, "NOT_FOUND");

    const connected = await t.call("POST", "/v1/agents/connect", {
      key: pending.connection_token,
      body: { public_key: randomPublicKey() },
    });
    expect(connected.statusCode, connected.body).toBe(200);
    expect(await unreadIds(a.apiKey, "later")).toEqual([broadcast.id]);
    expect(await unreadIds(a.apiKey, "first")).not.toContain(broadcast.id);
  });

  it("delivers to the agents at publish time only: an agent registered later never receives it", async () => {
    const a = await accountWith("early");
    const broadcast = await publish();
    await registerAgent(t, a.apiKey, { agent_id: "late" });
    expect(await unreadIds(a.apiKey, "early")).toContain(broadcast.id);
    expect(await unreadIds(a.apiKey, "late")).not.toContain(broadcast.id);
    expect(await deliveredTo(broadcast.id)).toHaveLength(broadcast.agent_count);
  });

  it("agent_ids: delivered to those agents only, each once; agent_count counts them", async () => {
    const a = await accountWith("one", "two");
    const b = await accountWith("three");
    const broadcast = await publish({
      agent_ids: [a.agents.one, b.agents.three, a.agents.one.toUpperCase()],
      severity: "critical",
    });
    expect(broadcast.agent_count).toBe(2);
    expect(broadcast.affected_components).toEqual([]);
    expect(await deliveredTo(broadcast.id)).toEqual([a.agents.one, b.agents.three].sort());
    expect(await unreadIds(a.apiKey, "one")).toEqual([broadcast.id]);
    expect(await unreadIds(a.apiKey, "two")).toEqual([]);
    expect(await unreadIds(b.apiKey, "three")).toEqual([broadcast.id]);
  });

  it("agent_ids: [] publishes to nobody", async () => {
    const broadcast = await publish({ agent_ids: [] });
    expect(broadcast.agent_count).toBe(0);
    expect(await deliveredTo(broadcast.id)).toEqual([]);
  });

  it("400 VALIDATION_ERROR naming each unknown or disconnected agent id; nothing is published", async () => {
    const a = await accountWith("kept", "dropped");
    await t.call("DELETE", `/v1/agents/${a.agents.dropped}`, { key: a.apiKey });
    const res = await publishRaw({
      title: "Bad audience",
      content: "x",
      severity: "info",
      agent_ids: [a.agents.kept, randomUUID(), a.agents.dropped],
    });
    const error = expectError(res, 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toEqual(["agent_ids.1", "agent_ids.2"]);
    expect(await unreadIds(a.apiKey, "kept")).toEqual([]);
  });

  it.each([
    ["an unknown severity", { severity: "urgent" }, "severity"],
    ["a missing severity", { severity: undefined }, "severity"],
    ["an empty title", { title: "" }, "title"],
    ["a title over 200 characters", { title: "t".repeat(201) }, "title"],
    ["a missing title", { title: undefined }, "title"],
    ["content over 20,000 characters", { content: "c".repeat(20_001) }, "content"],
    ["a missing content", { content: undefined }, "content"],
    ["affected_components that are not strings", { affected_components: [1] }, "affected_components.0"],
    ["agent_ids that are not UUIDs", { agent_ids: ["alpha"] }, "agent_ids.0"],
  ])("400 VALIDATION_ERROR for %s", async (_label, change, path) => {
    const res = await publishRaw({ title: "T", content: "C", severity: "info", ...change });
    const error = expectError(res, 400, "VALIDATION_ERROR");
    expect(detailPaths(error)).toContain(path);
  });

  it("takes a title of 200 characters and content of 20,000", async () => {
    const broadcast = await publish({ title: "t".repeat(200), content: "c".repeat(20_000), agent_ids: [] });
    expect(broadcast.title).toHaveLength(200);
    expect(broadcast.content).toHaveLength(20_000);
  });

  it("401 without the admin token, and with an API key in its place", async () => {
    const body = { title: "T", content: "C", severity: "info" };
    expectError(await t.call("POST", "/v1/admin/broadcasts", { body }), 401, "UNAUTHORIZED");
    expectError(await publishRaw(body, "not-the-admin-token"), 401, "UNAUTHORIZED");
    const { apiKey } = await t.newAccount();
    expectError(await publishRaw(body, apiKey), 401, "UNAUTHORIZED");
  });

  it("Idempotency-Key: a retry returns the first broadcast and publishes nothing more", async () => {
    const a = await accountWith("solo");
    const body = { title: "Once", content: "only once", severity: "info", agent_ids: [a.agents.solo] };
    const headers = { "idempotency-key": `publish-${randomUUID()}` };
    const first = await t.call("POST", "/v1/admin/broadcasts", { key: ADMIN_TOKEN, body, headers });
    const again = await t.call("POST", "/v1/admin/broadcasts", { key: ADMIN_TOKEN, body, headers });
    expect(first.statusCode, first.body).toBe(201);
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(await unreadIds(a.apiKey, "solo")).toEqual([first.json().id]);
  });
});

describe("GET /v1/broadcasts", () => {
  it("lists the calling agent's unread broadcasts newest first, with the spec's page fields", async () => {
    const a = await accountWith("reader");
    const to = [a.agents.reader];
    const first = await publish({ title: "first", agent_ids: to });
    const second = await publish({ title: "second", severity: "critical", agent_ids: to });
    const third = await publish({ title: "third", agent_ids: to });

    const res = await listRaw(a.apiKey);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["x-ratelimit-limit"]).toBeDefined();
    const page = res.json() as Page;
    expect(Object.keys(page).sort()).toEqual(["broadcasts", "has_more", "limit", "offset", "total"]);
    expect(page).toMatchObject({ total: 3, limit: 20, offset: 0, has_more: false });
    expect(page.broadcasts.map((b) => b.id)).toEqual([third.id, second.id, first.id]);
    expect(page.broadcasts[1]).toEqual(second);
    for (const broadcast of page.broadcasts) expect(Object.keys(broadcast).sort()).toEqual(BROADCAST_KEYS);
  });

  it("filters by severity; total counts the filtered list", async () => {
    const a = await accountWith("filtered");
    const to = [a.agents.filtered];
    const info = await publish({ severity: "info", agent_ids: to });
    const critical = await publish({ severity: "critical", agent_ids: to });
    const action = await publish({ severity: "action_required", agent_ids: to });
    const critical2 = await publish({ severity: "critical", agent_ids: to });

    const criticalPage = await list(a.apiKey, "?severity=critical");
    expect(criticalPage.broadcasts.map((b) => b.id)).toEqual([critical2.id, critical.id]);
    expect(criticalPage.total).toBe(2);
    expect((await list(a.apiKey, "?severity=info")).broadcasts.map((b) => b.id)).toEqual([info.id]);
    expect((await list(a.apiKey, "?severity=action_required")).broadcasts.map((b) => b.id)).toEqual([
      action.id,
    ]);
    expect((await list(a.apiKey)).total).toBe(4);
  });

  it("pages with limit and offset: total, has_more", async () => {
    const a = await accountWith("pager");
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await publish({ title: `n${i}`, agent_ids: [a.agents.pager] })).id);
    const newestFirst = [...ids].reverse();

    const one = await list(a.apiKey, "?limit=2");
    expect(one).toMatchObject({ total: 5, limit: 2, offset: 0, has_more: true });
    expect(one.broadcasts.map((b) => b.id)).toEqual(newestFirst.slice(0, 2));
    const two = await list(a.apiKey, "?limit=2&offset=2");
    expect(two).toMatchObject({ total: 5, limit: 2, offset: 2, has_more: true });
    expect(two.broadcasts.map((b) => b.id)).toEqual(newestFirst.slice(2, 4));
    const three = await list(a.apiKey, "?limit=2&offset=4");
    expect(three).toMatchObject({ total: 5, offset: 4, has_more: false });
    expect(three.broadcasts.map((b) => b.id)).toEqual(newestFirst.slice(4));
    const past = await list(a.apiKey, "?offset=10");
    expect(past).toMatchObject({ broadcasts: [], total: 5, has_more: false });
    expect((await list(a.apiKey, "?limit=100")).limit).toBe(100);
  });

  it.each([
    ["limit 101", "?limit=101", "limit"],
    ["limit 0", "?limit=0", "limit"],
    ["a fractional limit", "?limit=1.5", "limit"],
    ["a negative offset", "?offset=-1", "offset"],
    ["an unknown severity", "?severity=urgent", "severity"],
  ])("400 VALIDATION_ERROR for %s", async (_label, query, path) => {
    const a = await accountWith("strict");
    const error = expectError(await listRaw(a.apiKey, query), 400, "VALIDATION_ERROR");
    expect(detailPaths(error).join(" ")).toContain(path);
  });

  it("X-Service-Agent picks the agent; without it, the account's first connected agent", async () => {
    const a = await accountWith("main", "side");
    const forSide = await publish({ agent_ids: [a.agents.side] });
    const forMain = await publish({ agent_ids: [a.agents.main] });
    expect(await unreadIds(a.apiKey)).toEqual([forMain.id]);
    expect(await unreadIds(a.apiKey, "main")).toEqual([forMain.id]);
    expect(await unreadIds(a.apiKey, "side")).toEqual([forSide.id]);

    // The first connected agent goes; the next one by creation time takes over.
    await t.call("DELETE", `/v1/agents/${a.agents.main}`, { key: a.apiKey });
    expect(await unreadIds(a.apiKey)).toEqual([forSide.id]);
  });

  it("a pending agent is never the default: the first connected one is", async () => {
    const a = await t.newAccount("builder");
    await registerPending(t, a.apiKey, "waiting");
    const live = await registerAgent(t, a.apiKey, { agent_id: "live" });
    const broadcast = await publish({ agent_ids: [live.id] });
    expect(await unreadIds(a.apiKey)).toEqual([broadcast.id]);
  });

  it("404 NOT_FOUND for an X-Service-Agent that is unknown, another account's, pending or disconnected", async () => {
    const a = await accountWith("mine", "retired");
    await registerPending(t, a.apiKey, "unconnected");
    await t.call("DELETE", `/v1/agents/${a.agents.retired}`, { key: a.apiKey });
    const b = await accountWith("theirs");
    expectError(await listRaw(a.apiKey, "", "nobody"), 404, "NOT_FOUND");
    expectError(await listRaw(a.apiKey, "", "theirs"), 404, "NOT_FOUND");
    expectError(await listRaw(a.apiKey, "", "unconnected"), 404, "NOT_FOUND");
    expectError(await listRaw(a.apiKey, "", "retired"), 404, "NOT_FOUND");
    expectError(await listRaw(b.apiKey, "", "mine"), 404, "NOT_FOUND");
  });

  it("404 NO_AGENTS on an account without a connected agent", async () => {
    const empty = await t.newAccount();
    expectError(await listRaw(empty.apiKey), 404, "NO_AGENTS");
    await registerPending(t, empty.apiKey, "not-yet");
    expectError(await listRaw(empty.apiKey), 404, "NO_AGENTS");
  });

  it("401 without a valid API key, and with the admin token", async () => {
    expectError(await t.call("GET", "/v1/broadcasts"), 401, "UNAUTHORIZED");
    expectError(await listRaw("hnd_not-a-real-key"), 401, "UNAUTHORIZED");
    expectError(await listRaw(ADMIN_TOKEN), 401, "UNAUTHORIZED");
  });
});

describe("PUT /v1/broadcasts/{id}/read", () => {
  it("200 {broadcast_id, agent_id, status: read}; burned for that agent only", async () => {
    const a = await accountWith("a1", "a2");
    const b = await accountWith("b1");
    const broadcast = await publish({ agent_ids: [a.agents.a1, a.agents.a2, b.agents.b1] });
    const kept = await publish({ agent_ids: [a.agents.a1] });

    const res = await read(a.apiKey, broadcast.id, "a1");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ broadcast_id: broadcast.id, agent_id: a.agents.a1, status: "read" });

    const after = await list(a.apiKey, "", "a1");
    expect(after.broadcasts.map((x) => x.id)).toEqual([kept.id]);
    expect(after.total).toBe(1);
    expect(await unreadIds(a.apiKey, "a2")).toEqual([broadcast.id]);
    expect(await unreadIds(b.apiKey, "b1")).toEqual([broadcast.id]);
  });

  it("without X-Service-Agent it burns for the account's first connected agent", async () => {
    const a = await accountWith("default", "other");
    const broadcast = await publish({ agent_ids: [a.agents.default, a.agents.other] });
    const res = await read(a.apiKey, broadcast.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().agent_id).toBe(a.agents.default);
    expect(await unreadIds(a.apiKey, "default")).toEqual([]);
    expect(await unreadIds(a.apiKey, "other")).toEqual([broadcast.id]);
  });

  it("reading again answers 200 the same, and it stays burned", async () => {
    const a = await accountWith("twice");
    const broadcast = await publish({ agent_ids: [a.agents.twice] });
    const first = await read(a.apiKey, broadcast.id);
    const second = await read(a.apiKey, broadcast.id);
    expect(first.statusCode, first.body).toBe(200);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json()).toEqual(first.json());
    expect(await unreadIds(a.apiKey)).toEqual([]);
    const events = await t.service.store.readStream(`broadcast-${broadcast.id}`);
    expect(events.map((e) => e.type)).toEqual(["BroadcastPublished", "BroadcastRead"]);
  });

  it("accepts the id in upper case", async () => {
    const a = await accountWith("upper");
    const broadcast = await publish({ agent_ids: [a.agents.upper] });
    const res = await read(a.apiKey, broadcast.id.toUpperCase());
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().broadcast_id).toBe(broadcast.id);
    expect(await unreadIds(a.apiKey)).toEqual([]);
  });

  it("404 NOT_FOUND for an unknown id, an id that is not a UUID, and a broadcast not delivered to this agent", async () => {
    const a = await accountWith("here", "there");
    const elsewhere = await publish({ agent_ids: [a.agents.there] });
    expectError(await read(a.apiKey, randomUUID(), "here"), 404, "NOT_FOUND");
    expectError(await read(a.apiKey, "not-a-uuid", "here"), 404, "NOT_FOUND");
    expectError(await read(a.apiKey, elsewhere.id, "here"), 404, "NOT_FOUND");
    const b = await accountWith("outsider");
    expectError(await read(b.apiKey, elsewhere.id), 404, "NOT_FOUND");
    // The refusals burned nothing.
    expect(await unreadIds(a.apiKey, "there")).toEqual([elsewhere.id]);
  });

  it("404 for an unknown X-Service-Agent, NO_AGENTS without a connected agent, 401 without a key", async () => {
    const a = await accountWith("only");
    const broadcast = await publish({ agent_ids: [a.agents.only] });
    expectError(await read(a.apiKey, broadcast.id, "ghost"), 404, "NOT_FOUND");
    const empty = await t.newAccount();
    expectError(await read(empty.apiKey, broadcast.id), 404, "NO_AGENTS");
    expectError(await t.call("PUT", `/v1/broadcasts/${broadcast.id}/read`), 401, "UNAUTHORIZED");
    expect(await unreadIds(a.apiKey)).toEqual([broadcast.id]);
  });
});

describe("projections rebuild", () => {
  // A fresh service: this suite's log stays short (see the report on event store ordering).
  let fresh: TestApp;
  beforeAll(async () => {
    fresh = await startTestApp();
  });
  afterAll(async () => fresh?.close());

  it("a read broadcast stays burned after every projection is dropped and rebuilt from the log", async () => {
    const account = await fresh.newAccount("builder");
    const x1 = await registerAgent(fresh, account.apiKey, { agent_id: "x1" });
    const x2 = await registerAgent(fresh, account.apiKey, { agent_id: "x2" });
    const publishTo = async (title: string, severity: string, agentIds: string[]) => {
      const res = await fresh.call("POST", "/v1/admin/broadcasts", {
        key: ADMIN_TOKEN,
        body: { title, content: "c", severity, agent_ids: agentIds },
      });
      expect(res.statusCode, res.body).toBe(201);
      return (res.json() as Broadcast).id;
    };
    const unreadOf = async (agent: string) => {
      const res = await fresh.call("GET", "/v1/broadcasts", {
        key: account.apiKey,
        headers: agentHeader(agent),
      });
      expect(res.statusCode, res.body).toBe(200);
      return (res.json() as Page).broadcasts.map((b) => b.id);
    };
    const readAs = (agent: string, id: string) =>
      fresh.call("PUT", `/v1/broadcasts/${id}/read`, { key: account.apiKey, headers: agentHeader(agent) });

    const burned = await publishTo("burned", "info", [x1.id, x2.id]);
    const unread = await publishTo("unread", "critical", [x1.id]);
    expect((await readAs("x1", burned)).statusCode).toBe(200);
    const before = await dumpReadModels(fresh.service.db);
    expect(before.broadcast_deliveries).toHaveLength(3);

    await fresh.service.engine.stop();
    for (const { name } of projections) await fresh.service.engine.rebuild(name, () => {});
    await fresh.service.engine.start();

    expect(await dumpReadModels(fresh.service.db)).toEqual(before);
    expect(await unreadOf("x1")).toEqual([unread]);
    expect(await unreadOf("x2")).toEqual([burned]);
    const again = await readAs("x1", burned);
    expect(again.statusCode, again.body).toBe(200);
    expect(await unreadOf("x1")).toEqual([unread]);
  });
});
