import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, expectError, registerAgent, registerPending } from "./helpers.js";
import { postTransfer } from "./transfer-helpers.js";

const file = (name: string) => [{ name, data: Buffer.from(`contents of ${name}`) }];

async function publish(t: TestApp, body: Record<string, unknown>) {
  const res = await t.call("POST", "/v1/admin/broadcasts", { key: ADMIN_TOKEN, body });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string };
}

/** An account with two agents, a connection each way, transfers and broadcasts: a busy profile. */
async function busyAccount(t: TestApp) {
  const me = await t.newAccount("builder");
  const peer = await t.newAccount("builder");
  const asker = await t.newAccount("builder");
  const alice = await registerAgent(t, me.apiKey, {
    agent_id: "alice",
    name: "Alice",
    description: "sorts mail",
  });
  const bob = await registerAgent(t, me.apiKey, { agent_id: "bob" });
  await registerAgent(t, peer.apiKey, { agent_id: "pal" });
  const invite = await t.call("POST", "/v1/connections", { key: me.apiKey, body: { account: peer.email } });
  await t.call("POST", `/v1/connections/${invite.json().id}/accept`, { key: peer.apiKey });
  await t.call("POST", "/v1/connections", { key: asker.apiKey, body: { account: me.email } });
  for (let i = 0; i < 7; i++) {
    const sent = await postTransfer(t, me.apiKey, file(`f${i}.txt`), {
      sender: "bob",
      recipient: "alice",
      mode: "agent-to-agent",
      message: `number ${i}`,
    });
    expect(sent.statusCode, sent.body).toBe(201);
  }
  return { me, peer, alice, bob };
}

describe("startup profile (GET /v1/agents/me)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("gives every field of spec 4.8 from the read models", async () => {
    const { me, alice } = await busyAccount(t);
    const critical = await publish(t, {
      title: "Rotate keys",
      content: "**now**",
      severity: "critical",
      agent_ids: [alice.id],
    });
    await publish(t, { title: "FYI", content: "news", severity: "info", agent_ids: [alice.id] });
    const res = await t.call("GET", "/v1/agents/me", { key: me.apiKey });
    expect(res.statusCode, res.body).toBe(200);
    const profile = res.json();
    expect(profile.agent).toEqual({
      id: alice.id,
      agent_id: "alice",
      name: "Alice",
      description: "sorts mail",
      connection_status: "connected",
      key_version: 1,
      public_key_algorithm: "X25519",
      last_seen_at: expect.any(String),
    });
    expect(profile.account).toEqual({ plan: "builder", email: me.email });
    expect(profile.plan_limits).toEqual({
      transfers_per_month: 500,
      storage_bytes: 25 * 1024 ** 3,
      max_file_size: 500 * 1024 ** 2,
      max_agents: 10,
      max_connections: 25,
    });
    expect(profile.connections).toEqual({
      active: 1,
      pending_incoming: 1,
      pending_outgoing: 0,
      paired_agents: ["pal"],
    });
    expect(profile.inbox.unread_transfers).toBe(7);
    expect(profile.inbox.recent).toHaveLength(5);
    expect(profile.inbox.recent[0]).toMatchObject({
      sender: "bob",
      status: "active",
      message: "number 6",
      file_count: 1,
    });
    expect(profile.broadcasts.unread_count).toBe(2);
    expect(profile.broadcasts.urgent).toEqual([
      {
        id: critical.id,
        title: "Rotate keys",
        severity: "critical",
        content: "**now**",
        created_at: expect.any(String),
      },
    ]);
    expect(Object.keys(profile.sdk.latest_versions).sort()).toEqual(["mcp", "node", "python"]);
  });

  it("picks the agent named by X-Service-Agent and updates its last_seen_at", async () => {
    const { me } = await busyAccount(t);
    const first = (
      await t.call("GET", "/v1/agents/me", { key: me.apiKey, headers: { "x-service-agent": "bob" } })
    ).json();
    expect(first.agent.agent_id).toBe("bob");
    const later = await advanceClock(t, 120);
    const second = (
      await t.call("GET", "/v1/agents/me", { key: me.apiKey, headers: { "x-service-agent": "bob" } })
    ).json();
    expect(Date.parse(second.agent.last_seen_at)).toBeGreaterThan(Date.parse(first.agent.last_seen_at));
    expect(Math.abs(Date.parse(second.agent.last_seen_at) - Date.parse(later))).toBeLessThan(5000);
    const listed = (await t.call("GET", "/v1/agents", { key: me.apiKey })).json().agents;
    expect(listed.find((a: { agent_id: string }) => a.agent_id === "bob").last_seen_at).toBe(
      second.agent.last_seen_at,
    );
    expectError(
      await t.call("GET", "/v1/agents/me", { key: me.apiKey, headers: { "x-service-agent": "nobody" } }),
      404,
      "NOT_FOUND",
    );
  });

  it("answers 404 NO_AGENTS without a connected agent, and 401 without a key", async () => {
    const empty = await t.newAccount();
    expectError(await t.call("GET", "/v1/agents/me", { key: empty.apiKey }), 404, "NO_AGENTS");
    await registerPending(t, empty.apiKey, "not-yet");
    expectError(await t.call("GET", "/v1/agents/me", { key: empty.apiKey }), 404, "NO_AGENTS");
    expectError(await t.call("GET", "/v1/agents/me"), 401, "UNAUTHORIZED");
  });

  it("shows a critical broadcast as urgent until that agent reads it; another agent still sees it", async () => {
    const { me, alice, bob } = await busyAccount(t);
    const critical = await publish(t, {
      title: "Incident",
      content: "read me",
      severity: "critical",
      agent_ids: [alice.id, bob.id],
    });
    const as = (agent: string) => ({ key: me.apiKey, headers: { "x-service-agent": agent } });
    expect(
      (await t.call("GET", "/v1/agents/me", as("alice")))
        .json()
        .broadcasts.urgent.map((b: { id: string }) => b.id),
    ).toEqual([critical.id]);

    const read = await t.call("PUT", `/v1/broadcasts/${critical.id}/read`, as("alice"));
    expect(read.json()).toEqual({ broadcast_id: critical.id, agent_id: alice.id, status: "read" });

    const aliceProfile = (await t.call("GET", "/v1/agents/me", as("alice"))).json();
    expect(aliceProfile.broadcasts).toEqual({ unread_count: 0, urgent: [] });
    expect((await t.call("GET", "/v1/broadcasts", as("alice"))).json().broadcasts).toEqual([]);
    const bobProfile = (await t.call("GET", "/v1/agents/me", as("bob"))).json();
    expect(bobProfile.broadcasts.urgent.map((b: { id: string }) => b.id)).toEqual([critical.id]);
  });

  it("is byte-identical after every projection is rebuilt from the log", async () => {
    const { me, alice } = await busyAccount(t);
    const urgent = await publish(t, {
      title: "Act",
      content: "now",
      severity: "action_required",
      agent_ids: [alice.id],
    });
    await publish(t, {
      title: "Old news",
      content: "read",
      severity: "critical",
      agent_ids: [alice.id],
    }).then((b) => t.call("PUT", `/v1/broadcasts/${b.id}/read`, { key: me.apiKey }));
    await t.call("GET", "/v1/agents/me", { key: me.apiKey });
    const before = (await t.call("GET", "/v1/agents/me", { key: me.apiKey })).body;
    expect(before).toContain(urgent.id);

    await t.service.engine.stop();
    for (const { name } of projections) await t.service.engine.rebuild(name, () => {});
    await t.service.engine.start();

    const after = (await t.call("GET", "/v1/agents/me", { key: me.apiKey })).body;
    expect(after).toBe(before);
  });
});
