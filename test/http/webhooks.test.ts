import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer } from "../support/databases.js";
import {
  type Answer,
  closedPort,
  type Received,
  type Receiver,
  startReceiver,
} from "../support/webhook-receiver.js";
import { advanceClock, expectError, registerAgent } from "./helpers.js";
import { downloadOk, sendTransfer, waitUntil } from "./transfer-helpers.js";

let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  t = await startTestApp({
    database: postgresServer ? "postgres" : "pglite",
    env: { WEBHOOKS_ALLOW_PRIVATE: "1" },
    service: { webhookAttemptTimeoutMs: 500 },
  });
  receiver = await startReceiver();
  receiver.answer = answerByCase;
});
afterAll(async () => {
  await receiver.close();
  await t.close();
});
afterEach(() => {
  receiver.answer = answerByCase;
});

/** A second receiver: where the redirecting case points, which must never be reached. */
let elsewhere: Receiver;

/** The receiver answers by the `case` its URL names: 500, no answer, a redirect, else 200. */
function answerByCase(r: Received): Answer {
  const which = new URL(r.url, "http://x").searchParams.get("case");
  if (which === "500") return { status: 500 };
  if (which === "hang") return "hang";
  if (which === "redirect") return { status: 302, headers: { location: `${elsewhere.url}?stolen=1` } };
  return { status: 200 };
}

interface Delivery {
  message_id: string;
  type: string;
  status: string;
  attempts: { at: string; status_code: number | null; duration_ms: number; error: string | null }[];
  next_attempt_at: string | null;
}

/** An account with two agents: alice (sender) and bob (recipient), each with a webhook on `url`. */
async function hookedParties(url: string) {
  const account = await t.newAccount("team");
  const register = (slug: string) => hooked(account.apiKey, slug, `${url}?agent=${slug}`);
  return { ...account, alice: await register("alice"), bob: await register("bob") };
}

/** A connected agent registered with a webhook_url: the answer carries its secret. */
async function hooked(key: string, slug: string, url: string) {
  const agent = await registerAgent(t, key, { agent_id: slug, webhook_url: url });
  return agent as typeof agent & { webhook_secret: string };
}

async function deliveries(key: string, agentId: string, query = ""): Promise<Delivery[]> {
  const res = await t.call("GET", `/v1/agents/${agentId}/webhook-deliveries${query}`, { key });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().deliveries;
}

/**
 * Sends the agent a test message and answers its `webhook-signature` header's signatures, and the
 * signature a given secret makes of that message.
 */
async function testSignatures(key: string, agentId: string) {
  const test = await t.call("POST", `/v1/agents/${agentId}/webhook-test`, { key });
  expect(test.statusCode, test.body).toBe(202);
  // Other messages come too as the clock moves (the earlier tests' transfers expire).
  const find = () => receiver.received.find((r) => r.headers["webhook-id"] === test.json().message_id);
  await waitUntil(() => find() !== undefined, "the test message arrived");
  const r = find();
  if (!r) throw new Error("no message");
  const id = String(r.headers["webhook-id"]);
  const timestamp = new Date(Number(r.headers["webhook-timestamp"]) * 1000);
  const expected = (secret: string) => new Webhook(secret).sign(id, timestamp, r.body);
  return { header: String(r.headers["webhook-signature"]).split(" "), expected };
}

/** The agent a message was sent for: the test's URLs name it (`?agent=`). */
const agentOf = (r: Received) => new URL(r.url, "http://x").searchParams.get("agent");

describe("setting a webhook (decisions 8.1)", () => {
  it("answers the secret once, at the first URL; agents show the URL and its status", async () => {
    const account = await t.newAccount();
    const { id, webhook_secret: secret } = await hooked(account.apiKey, "hooked", receiver.url);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), "base64")).toHaveLength(32);

    const shown = await t.call("GET", `/v1/agents/${id}`, { key: account.apiKey });
    expect(shown.json()).toMatchObject({ webhook_url: receiver.url, webhook_status: "active" });
    expect(shown.body).not.toContain(secret.slice(6));

    const changed = await t.call("PATCH", `/v1/agents/${id}`, {
      key: account.apiKey,
      body: { webhook_url: `${receiver.url}/other` },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json()).toMatchObject({ webhook_url: `${receiver.url}/other`, webhook_status: "active" });
    expect(changed.json()).not.toHaveProperty("webhook_secret");

    const cleared = await t.call("PATCH", `/v1/agents/${id}`, {
      key: account.apiKey,
      body: { webhook_url: null },
    });
    expect(cleared.json()).toMatchObject({ webhook_url: null, webhook_status: null });

    // An agent registered without a URL gets its secret with the first PATCH that sets one.
    const plain = await registerAgent(t, account.apiKey, { agent_id: "plain" });
    const listed = await t.call("GET", "/v1/agents", { key: account.apiKey });
    expect(listed.json().agents.find((a: { id: string }) => a.id === plain.id)).toMatchObject({
      webhook_url: null,
      webhook_status: null,
    });
    const first = await t.call("PATCH", `/v1/agents/${plain.id}`, {
      key: account.apiKey,
      body: { webhook_url: receiver.url },
    });
    expect(first.json().webhook_secret).toMatch(/^whsec_/);
  });

  it("keeps every secret out of the log and the history", async () => {
    const account = await t.newAccount();
    const { id, webhook_secret: secret } = await hooked(account.apiKey, "sealed", receiver.url);
    const rotated = await t.call("POST", `/v1/agents/${id}/webhook-secret`, { key: account.apiKey });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const newer = rotated.json().webhook_secret;
    expect(newer).toMatch(/^whsec_/);
    expect(newer).not.toBe(secret);
    const log = JSON.stringify(await t.service.store.readAll(null, 100_000));
    for (const value of [secret, newer]) {
      expect(log).not.toContain(value.slice(6));
      expect(log).not.toContain(value.slice(6, 30));
    }
    const stored = JSON.stringify(await t.service.db("webhook_endpoints").where({ agent_id: id }));
    expect(stored).not.toContain(newer.slice(6, 30));
  });

  it("refuses another account's agent with 404, and a rotation or test without a URL with 409", async () => {
    const owner = await t.newAccount();
    const other = await t.newAccount();
    const agent = await registerAgent(t, owner.apiKey, { agent_id: "mine" });
    for (const [method, path] of [
      ["POST", "webhook-secret"],
      ["POST", "webhook-test"],
      ["GET", "webhook-deliveries"],
      ["POST", "webhook-deliveries/msg_0/redeliver"],
    ] as const) {
      expectError(
        await t.call(method, `/v1/agents/${agent.id}/${path}`, { key: other.apiKey }),
        404,
        "NOT_FOUND",
      );
    }
    expectError(
      await t.call("POST", `/v1/agents/${agent.id}/webhook-secret`, { key: owner.apiKey }),
      409,
      "CONFLICT",
    );
    expectError(
      await t.call("POST", `/v1/agents/${agent.id}/webhook-test`, { key: owner.apiKey }),
      409,
      "CONFLICT",
    );
    expectError(
      await t.call("POST", `/v1/agents/${agent.id}/webhook-deliveries/msg_0/redeliver`, {
        key: owner.apiKey,
      }),
      404,
      "NOT_FOUND",
    );
  });
});

describe("delivery (decisions 8.2–8.3)", () => {
  it("signs every message so the standardwebhooks library verifies it, in log order per agent", async () => {
    const p = await hookedParties(receiver.url);
    const start = receiver.received.length;
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push(await sendTransfer(t, p.apiKey, undefined, { message: `n${i}` }));
    await downloadOk(t, p.apiKey, sent[0]?.id ?? "", "bob");
    const broadcast = await t.call("POST", "/v1/admin/broadcasts", {
      key: ADMIN_TOKEN,
      body: { title: "Maintenance", content: "Secret plan", severity: "info", agent_ids: [p.bob.id] },
    });
    expect(broadcast.statusCode, broadcast.body).toBe(201);
    const test = await t.call("POST", `/v1/agents/${p.alice.id}/webhook-test`, { key: p.apiKey });
    expect(test.statusCode, test.body).toBe(202);

    await waitUntil(() => receiver.received.length - start >= 6, "six messages arrived", 15_000);
    const mine = receiver.received.slice(start);
    const toBob = mine.filter((r) => agentOf(r) === "bob");
    const toAlice = mine.filter((r) => agentOf(r) === "alice");
    for (const [list, secret] of [
      [toBob, p.bob.webhook_secret],
      [toAlice, p.alice.webhook_secret],
    ] as const) {
      for (const r of list) {
        expect(r.headers["content-type"]).toBe("application/json");
        const verified = new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
        expect(verified).toEqual(JSON.parse(r.body));
      }
    }
    const bobMessages = toBob.map((r) => JSON.parse(r.body));
    expect(bobMessages.map((m) => m.type)).toEqual([
      "transfer.received",
      "transfer.received",
      "transfer.received",
      "broadcast.published",
    ]);
    expect(bobMessages.slice(0, 3).map((m) => m.data.message)).toEqual(["n0", "n1", "n2"]);
    expect(bobMessages[0].data).toMatchObject({
      id: sent[0]?.id,
      sender: "alice",
      recipient: "bob",
      status: "active",
    });
    expect(bobMessages[3].data).toMatchObject({ title: "Maintenance", severity: "info", agent_count: 1 });
    expect(bobMessages[3].data).not.toHaveProperty("content");
    const aliceMessages = toAlice.map((r) => JSON.parse(r.body));
    expect(aliceMessages.map((m) => m.type).sort()).toEqual(["transfer.downloaded", "webhook.test"]);
    expect(aliceMessages.find((m) => m.type === "transfer.downloaded").data).toEqual({
      transfer_id: sent[0]?.id,
      downloads: 1,
      max_downloads: sent[0]?.max_downloads,
      downloaded_by: "bob",
    });
    const testMessage = toAlice.find((r) => JSON.parse(r.body).type === "webhook.test");
    expect(testMessage?.headers["webhook-id"]).toBe(test.json().message_id);

    // The delivery log, newest first, and every attempt in the agent's history and the audit feed.
    const log = await deliveries(p.apiKey, p.bob.id);
    expect(log.map((d) => d.type)).toEqual([
      "broadcast.published",
      "transfer.received",
      "transfer.received",
      "transfer.received",
    ]);
    for (const d of log) {
      expect(d.status).toBe("delivered");
      expect(d.attempts).toHaveLength(1);
      expect(d.attempts[0]).toMatchObject({ status_code: 200, error: null });
      expect(d.next_attempt_at).toBeNull();
    }
    const page = await t.call("GET", `/v1/agents/${p.bob.id}/webhook-deliveries?limit=3`, { key: p.apiKey });
    expect(page.json()).toMatchObject({ has_more: true });
    const rest = await deliveries(p.apiKey, p.bob.id, `?limit=3&cursor=${page.json().next_cursor}`);
    expect(rest.map((d) => d.message_id)).toEqual([log[3]?.message_id]);

    await waitUntil(async () => {
      const history = await t.call("GET", `/v1/agents/${p.bob.id}/history`, { key: p.apiKey });
      const attempts = history.json().entries.filter((e: { type: string }) => e.type === "WebhookAttempted");
      return attempts.length === 4;
    }, "the history shows the four attempts");
    const history = (await t.call("GET", `/v1/agents/${p.bob.id}/history`, { key: p.apiKey })).json();
    const attempted = history.entries.filter((e: { type: string }) => e.type === "WebhookAttempted");
    expect(attempted.map((e: { data: { messageId: string } }) => e.data.messageId).sort()).toEqual(
      log.map((d) => d.message_id).sort(),
    );
    const audit = (
      await t.call("GET", "/v1/audit?type=WebhookAttempted&limit=100", { key: p.apiKey })
    ).json();
    expect(JSON.stringify(audit)).toContain(log[0]?.message_id);
  });

  it("sends an urgent broadcast's content", async () => {
    const p = await hookedParties(receiver.url);
    const start = receiver.received.length;
    await t.call("POST", "/v1/admin/broadcasts", {
      key: ADMIN_TOKEN,
      body: { title: "Rotate keys", content: "Do it now", severity: "critical", agent_ids: [p.alice.id] },
    });
    await waitUntil(() => receiver.received.length > start, "the broadcast arrived");
    expect(JSON.parse(receiver.received[start]?.body ?? "{}").data).toMatchObject({ content: "Do it now" });
  });

  it("signs with both secrets for 24 hours after a rotation, then with the new one only", async () => {
    const p = await hookedParties(receiver.url);
    const old = p.alice.webhook_secret;
    const rotated = await t.call("POST", `/v1/agents/${p.alice.id}/webhook-secret`, { key: p.apiKey });
    const fresh = rotated.json().webhook_secret as string;
    const signaturesOf = () => testSignatures(p.apiKey, p.alice.id);
    const during = await signaturesOf();
    expect(during.header).toEqual([during.expected(fresh), during.expected(old)]);
    await advanceClock(t, 23 * 3600);
    const late = await signaturesOf();
    expect(late.header).toEqual([late.expected(fresh), late.expected(old)]);
    await advanceClock(t, 3600);
    const after = await signaturesOf();
    expect(after.header).toEqual([after.expected(fresh)]);
  });
});

/** One agent on a fresh account whose webhook URL names a `case` the receiver answers by. */
async function hookedAgent(url: string) {
  const account = await t.newAccount();
  const agent = await registerAgent(t, account.apiKey, { agent_id: "hooked", webhook_url: url });
  return { key: account.apiKey, id: agent.id };
}

async function requestTest(agent: { key: string; id: string }): Promise<string> {
  const res = await t.call("POST", `/v1/agents/${agent.id}/webhook-test`, { key: agent.key });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().message_id;
}

/** The message's entry in the delivery log once it has `attempts` attempts. */
async function afterAttempts(agent: { key: string; id: string }, messageId: string, attempts: number) {
  let found: Delivery | undefined;
  await waitUntil(
    async () => {
      found = (await deliveries(agent.key, agent.id)).find((d) => d.message_id === messageId);
      return (
        (found !== undefined && found.attempts.length >= attempts && found.status !== "pending") ||
        ((found?.attempts.length ?? 0) >= attempts && found?.next_attempt_at !== null)
      );
      // A loaded machine (two cores for the whole suite) can take seconds after a 3-day clock jump.
    },
    `attempt ${attempts} of ${messageId} was recorded`,
    20_000,
  );
  expect(found?.attempts).toHaveLength(attempts);
  return found as Delivery;
}

describe("retries on the service clock (decisions 8.3)", () => {
  const SCHEDULE_S = [5, 60, 300, 1800, 7200, 21600, 43200];

  beforeAll(async () => {
    elsewhere = await startReceiver();
  });
  afterAll(async () => elsewhere.close());
  it("retries a 500 after 5 s, 1 min, 5 min, 30 min, 2 h, 6 h and 12 h, then fails; a redelivery is one more", async () => {
    const agent = await hookedAgent(`${receiver.url}?case=500`);
    const messageId = await requestTest(agent);
    let delivery = await afterAttempts(agent, messageId, 1);
    expect(delivery).toMatchObject({ status: "pending", type: "webhook.test" });
    expect(delivery.attempts[0]).toMatchObject({ status_code: 500, error: "answered 500" });
    for (const [i, seconds] of SCHEDULE_S.entries()) {
      const due = Date.parse(delivery.next_attempt_at ?? "");
      const last = Date.parse(delivery.attempts.at(-1)?.at ?? "");
      expect(due - last).toBeGreaterThanOrEqual(seconds * 1000);
      expect(due - last).toBeLessThan(seconds * 1000 + 2000);
      // Not a moment early: a second before it is due, nothing is sent.
      await advanceClock(t, seconds - 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await deliveries(agent.key, agent.id))[0]?.attempts).toHaveLength(i + 1);
      await advanceClock(t, 1);
      delivery = await afterAttempts(agent, messageId, i + 2);
    }
    expect(delivery).toMatchObject({ status: "failed", next_attempt_at: null });
    expect(receiver.received.filter((r) => r.headers["webhook-id"] === messageId)).toHaveLength(8);
    // Same id and body on every attempt.
    const bodies = new Set(
      receiver.received.filter((r) => r.headers["webhook-id"] === messageId).map((r) => r.body),
    );
    expect(bodies.size).toBe(1);

    receiver.answer = () => ({ status: 204 });
    const again = await t.call("POST", `/v1/agents/${agent.id}/webhook-deliveries/${messageId}/redeliver`, {
      key: agent.key,
    });
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json()).toMatchObject({ message_id: messageId, status: "pending" });
    await waitUntil(
      async () => (await deliveries(agent.key, agent.id))[0]?.status === "delivered",
      "redelivered",
    );
    const done = (await deliveries(agent.key, agent.id))[0];
    expect(done?.attempts).toHaveLength(9);
    expect(done?.attempts[8]).toMatchObject({ status_code: 204, error: null });
  });

  it("retries a time-out, a refused connection and a redirect (never followed) on the same schedule", async () => {
    const port = await closedPort();
    const cases = [
      { url: `${receiver.url}?case=hang`, error: /^no answer within/, status: null },
      { url: `http://127.0.0.1:${port}/hook`, error: /ECONNREFUSED/, status: null },
      { url: `${receiver.url}?case=redirect`, error: /^redirect to .* not followed$/, status: 302 },
    ];
    const agents = await Promise.all(cases.map((c) => hookedAgent(c.url)));
    const ids = await Promise.all(agents.map(requestTest));
    for (const [i, c] of cases.entries()) {
      const agent = agents[i] as { key: string; id: string };
      const delivery = await afterAttempts(agent, ids[i] as string, 1);
      expect(delivery.status).toBe("pending");
      expect(delivery.attempts[0]?.status_code).toBe(c.status);
      expect(delivery.attempts[0]?.error).toMatch(c.error);
      expect(
        Date.parse(delivery.next_attempt_at ?? "") - Date.parse(delivery.attempts[0]?.at ?? ""),
      ).toBeGreaterThanOrEqual(5000);
    }
    await advanceClock(t, 5);
    for (const [i, c] of cases.entries()) {
      const delivery = await afterAttempts(agents[i] as { key: string; id: string }, ids[i] as string, 2);
      expect(delivery.attempts[1]?.error).toMatch(c.error);
      const gap = Date.parse(delivery.next_attempt_at ?? "") - Date.parse(delivery.attempts[1]?.at ?? "");
      expect(gap).toBeGreaterThanOrEqual(60_000);
      expect(gap).toBeLessThan(62_000);
    }
    expect(elsewhere.received, "the redirect was never followed").toEqual([]);
  });

  it("disables an endpoint whose messages failed for 3 days in a row; a PATCH with a URL enables it", async () => {
    const agent = await hookedAgent(`${receiver.url}?case=500`);
    const first = await requestTest(agent);
    await afterAttempts(agent, first, 1);
    // Three days on, the retry fails too: failing since then, the endpoint is disabled.
    await advanceClock(t, 3 * 24 * 3600);
    await afterAttempts(agent, first, 2);
    await waitUntil(async () => {
      const shown = await t.call("GET", `/v1/agents/${agent.id}`, { key: agent.key });
      return shown.json().webhook_status === "disabled";
    }, "the webhook is disabled");
    expectError(
      await t.call("POST", `/v1/agents/${agent.id}/webhook-test`, { key: agent.key }),
      409,
      "CONFLICT",
    );
    const history = (await t.call("GET", `/v1/agents/${agent.id}/history`, { key: agent.key })).json();
    expect(history.entries.map((e: { type: string }) => e.type)).toContain("WebhookDisabled");
    const enabled = await t.call("PATCH", `/v1/agents/${agent.id}`, {
      key: agent.key,
      body: { webhook_url: `${receiver.url}?case=ok` },
    });
    expect(enabled.json()).toMatchObject({ webhook_status: "active" });
    expect(enabled.json()).not.toHaveProperty("webhook_secret");
    await afterAttempts(agent, await requestTest(agent), 1);
  });
});

describe("a crash between recording and storing a secret (issue 23)", () => {
  it("a rotation recorded whose request never made its secret current: the rotations reactor does, as the log says", async () => {
    const p = await hookedParties(receiver.url);
    const old = p.alice.webhook_secret;
    const secrets = t.service.webhookDeps.webhookSecrets;
    const promote = secrets.promote.bind(secrets);
    let skipped = 0;
    secrets.promote = async (...rotation) => {
      // The request's own step, which a crash right after the rotation was recorded never runs.
      if (new Error().stack?.includes("rotateWebhookSecret")) {
        skipped++;
        return;
      }
      await promote(...rotation);
    };
    try {
      const rotated = await t.call("POST", `/v1/agents/${p.alice.id}/webhook-secret`, { key: p.apiKey });
      expect(rotated.statusCode, rotated.body).toBe(200);
      expect(skipped).toBe(1);
      const fresh = rotated.json().webhook_secret as string;
      let signed: Awaited<ReturnType<typeof testSignatures>> | undefined;
      await waitUntil(
        async () => {
          signed = await testSignatures(p.apiKey, p.alice.id);
          return signed.header.length === 2;
        },
        "messages signed by two secrets",
        20_000,
      );
      expect(signed?.header).toEqual([signed?.expected(fresh), signed?.expected(old)]);
    } finally {
      secrets.promote = promote;
    }
  });

  it("a webhook whose first secret was lost: attempts say how to recover, and a PATCH with the URL answers one that signs", async () => {
    const account = await t.newAccount();
    const secrets = t.service.webhookDeps.webhookSecrets;
    const issue = secrets.issue.bind(secrets);
    // Registration recorded, then the process died before the secret was stored.
    secrets.issue = async () => null;
    let agent: Awaited<ReturnType<typeof hooked>>;
    try {
      agent = await hooked(account.apiKey, "lost", receiver.url);
    } finally {
      secrets.issue = issue;
    }
    expect(agent.webhook_secret ?? null, "no secret came back").toBeNull();
    const messageId = await requestTest({ key: account.apiKey, id: agent.id });
    const failed = await afterAttempts({ key: account.apiKey, id: agent.id }, messageId, 1);
    expect(failed.attempts[0]?.error).toBe("no signing secret: set the webhook_url again");

    const patched = await t.call("PATCH", `/v1/agents/${agent.id}`, {
      key: account.apiKey,
      body: { webhook_url: receiver.url },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    const secret = patched.json().webhook_secret as string;
    expect(secret).toMatch(/^whsec_/);
    const signed = await testSignatures(account.apiKey, agent.id);
    expect(signed.header).toEqual([signed.expected(secret)]);
  });
});
