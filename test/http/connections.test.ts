import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestApp, type TestApp } from "../support/app.js";
import { expectError, registerAgent, registerPending } from "./helpers.js";
import { postTransfer } from "./transfer-helpers.js";

interface Account {
  accountId: string;
  apiKey: string;
  email: string;
}

/** Two accounts connected through the API: `a` invites, `b` accepts. */
async function pair(t: TestApp, a: Account, b: Account): Promise<string> {
  const invited = await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: b.email } });
  expect(invited.statusCode, invited.body).toBe(201);
  const accepted = await t.call("POST", `/v1/connections/${invited.json().id}/accept`, { key: b.apiKey });
  expect(accepted.statusCode, accepted.body).toBe(200);
  return invited.json().id;
}

const file = [{ name: "hello.txt", data: Buffer.from("hello across accounts") }];

describe("account connections", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("invites, lists on both sides, accepts, and ends from either side", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const invited = await t.call("POST", "/v1/connections", {
      key: a.apiKey,
      body: { account: b.email.toUpperCase() },
    });
    expect(invited.statusCode, invited.body).toBe(201);
    const connection = invited.json();
    expect(connection).toMatchObject({
      status: "pending",
      direction: "outgoing",
      peer_account: { id: b.accountId, name: b.email.split("@")[0] },
    });
    expect(connection.peer_account.email_masked).not.toContain(b.email.split("@")[0]);
    expect(connection.peer_account.email_masked).toMatch(/^u\*\*\*@e\*\*\*\.com$/);

    const incoming = (await t.call("GET", "/v1/connections", { key: b.apiKey })).json().connections;
    expect(incoming).toMatchObject([{ id: connection.id, status: "pending", direction: "incoming" }]);
    expectError(
      await t.call("POST", `/v1/connections/${connection.id}/accept`, { key: a.apiKey }),
      403,
      "FORBIDDEN",
    );
    const accepted = await t.call("POST", `/v1/connections/${connection.id}/accept`, { key: b.apiKey });
    expect(accepted.json()).toMatchObject({ status: "active", direction: "incoming" });

    const ended = await t.call("DELETE", `/v1/connections/${connection.id}`, { key: b.apiKey });
    expect(ended.json()).toMatchObject({ id: connection.id, status: "revoked" });
    const again = await t.call("POST", "/v1/connections", { key: b.apiKey, body: { account: a.accountId } });
    expect(again.statusCode, "a revoked connection can be renewed").toBe(201);
  });

  it("refuses self, duplicates, strangers and answers by the wrong side", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const c = await t.newAccount();
    expectError(
      await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: a.email } }),
      400,
      "SELF_CONNECTION",
    );
    expectError(
      await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: "nobody@example.com" } }),
      404,
      "NOT_FOUND",
    );
    const invited = (
      await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: b.email } })
    ).json();
    expectError(
      await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: b.email } }),
      409,
      "INVITE_PENDING",
    );
    expectError(
      await t.call("POST", "/v1/connections", { key: b.apiKey, body: { account: a.email } }),
      409,
      "INVITE_PENDING",
    );
    expectError(
      await t.call("POST", `/v1/connections/${invited.id}/accept`, { key: c.apiKey }),
      404,
      "NOT_FOUND",
    );
    await t.call("POST", `/v1/connections/${invited.id}/accept`, { key: b.apiKey });
    expectError(
      await t.call("POST", "/v1/connections", { key: b.apiKey, body: { account: a.email } }),
      409,
      "ALREADY_CONNECTED",
    );
    expectError(await t.call("GET", "/v1/connections"), 401, "UNAUTHORIZED");
  });

  it("declined invitations free the inviter's slot; the plan's connection limit holds (free: 5)", async () => {
    const a = await t.newAccount();
    const peers = await Promise.all(Array.from({ length: 6 }, () => t.newAccount()));
    for (const peer of peers.slice(0, 5)) {
      const res = await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: peer.email } });
      expect(res.statusCode, res.body).toBe(201);
    }
    const sixth = peers[5] as Account;
    expectError(
      await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: sixth.email } }),
      403,
      "QUOTA_EXCEEDED",
    );
    const first = (await t.call("GET", "/v1/connections", { key: (peers[0] as Account).apiKey })).json()
      .connections[0];
    const declined = await t.call("POST", `/v1/connections/${first.id}/decline`, {
      key: (peers[0] as Account).apiKey,
    });
    expect(declined.json().status).toBe("declined");
    const now = await t.call("POST", "/v1/connections", { key: a.apiKey, body: { account: sixth.email } });
    expect(now.statusCode, now.body).toBe(201);
  });

  it("pairs two accounts: sendable, resolve and a transfer across, all gone once disconnected", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    await registerAgent(t, a.apiKey, { agent_id: "alice", name: "Alice" });
    await registerPending(t, a.apiKey, "pending-one");
    const bob = await registerAgent(t, b.apiKey, { agent_id: "bob", name: "Bob" });
    expectError(await t.call("GET", "/v1/agents/resolve?agent_id=bob", { key: a.apiKey }), 404, "NOT_FOUND");
    expect(
      (await postTransfer(t, a.apiKey, file, { sender: "alice", recipient: "bob", mode: "agent-to-agent" }))
        .statusCode,
    ).toBe(400);

    const connectionId = await pair(t, a, b);
    const sendable = (await t.call("GET", "/v1/agents/sendable", { key: a.apiKey })).json().agents;
    expect(sendable).toEqual([
      { id: expect.any(String), agent_id: "alice", name: "Alice", own: true },
      { id: bob.id, agent_id: "bob", name: "Bob", own: false, account_name: b.email.split("@")[0] },
    ]);
    const resolved = await t.call("GET", "/v1/agents/resolve?agent_id=bob", { key: a.apiKey });
    expect(resolved.json()).toEqual({
      agent_id: "bob",
      public_key: bob.public_key,
      public_key_algorithm: "X25519",
      key_version: 1,
      signing_public_key: null,
      connection_status: "connected",
      // Decisions 9.6: null until the log signs a checkpoint covering bob's keys (within about a second).
      key_proof:
        resolved.json().key_proof === null ? null : expect.objectContaining({ entry: expect.any(Object) }),
    });
    expect((await t.call("GET", `/v1/agents/resolve?agent_id=${bob.id}`, { key: a.apiKey })).statusCode).toBe(
      200,
    );

    const sent = await postTransfer(t, a.apiKey, file, {
      sender: "alice",
      recipient: "bob",
      mode: "agent-to-agent",
    });
    expect(sent.statusCode, sent.body).toBe(201);
    const inbox = (
      await t.call("GET", "/v1/transfers/inbox", { key: b.apiKey, headers: { "x-service-agent": "bob" } })
    ).json();
    expect(inbox.transfers.map((x: { id: string }) => x.id)).toEqual([sent.json().id]);
    const download = await t.call("GET", `/v1/transfers/${sent.json().id}/download`, { key: b.apiKey });
    expect(download.statusCode, download.body).toBe(200);

    await t.call("DELETE", `/v1/connections/${connectionId}`, { key: a.apiKey });
    expectError(await t.call("GET", "/v1/agents/resolve?agent_id=bob", { key: a.apiKey }), 404, "NOT_FOUND");
    expect((await t.call("GET", "/v1/agents/sendable", { key: a.apiKey })).json().agents).toHaveLength(1);
    expectError(
      await postTransfer(t, a.apiKey, file, { sender: "alice", recipient: "bob", mode: "agent-to-agent" }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await t.call("POST", "/v1/transfers/presigned", {
        key: a.apiKey,
        body: { sender: "alice", recipient: "bob", mode: "agent-to-agent", files: [{ name: "a", size: 1 }] },
      }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("gives AMBIGUOUS_RECIPIENT with masked candidates for a slug on two paired accounts, and the retry with account succeeds", async () => {
    const a = await t.newAccount();
    const b = await t.newAccount();
    const c = await t.newAccount();
    await registerAgent(t, a.apiKey, { agent_id: "alice" });
    const onB = await registerAgent(t, b.apiKey, { agent_id: "helper" });
    const onC = await registerAgent(t, c.apiKey, { agent_id: "helper" });
    await pair(t, a, b);
    await pair(t, c, a);

    const res = await t.call("GET", "/v1/agents/resolve?agent_id=helper", { key: a.apiKey });
    const error = expectError(res, 400, "AMBIGUOUS_RECIPIENT");
    const candidates = (res.json().error as { candidates: { account_id: string; email_masked: string }[] })
      .candidates;
    expect(candidates.map((candidate) => candidate.account_id).sort()).toEqual(
      [b.accountId, c.accountId].sort(),
    );
    for (const candidate of candidates) expect(candidate.email_masked).toMatch(/^\w\*\*\*@\w\*\*\*\.\w+$/);
    expect(JSON.stringify(error)).not.toContain(b.email);

    const byEmail = await t.call(
      "GET",
      `/v1/agents/resolve?agent_id=helper&account=${encodeURIComponent(c.email)}`,
      {
        key: a.apiKey,
      },
    );
    expect(byEmail.json().public_key).toBe(onC.public_key);
    const byId = await t.call("GET", `/v1/agents/resolve?agent_id=helper&account=${b.accountId}`, {
      key: a.apiKey,
    });
    expect(byId.json().public_key).toBe(onB.public_key);

    const fields = { sender: "alice", recipient: "helper", mode: "agent-to-agent" };
    expectError(await postTransfer(t, a.apiKey, file, fields), 400, "AMBIGUOUS_RECIPIENT");
    const retried = await postTransfer(t, a.apiKey, file, { ...fields, recipient_account: b.email });
    expect(retried.statusCode, retried.body).toBe(201);
    const inB = (await t.call("GET", "/v1/transfers?direction=received", { key: b.apiKey })).json();
    expect(inB.transfers.map((x: { id: string }) => x.id)).toEqual([retried.json().id]);

    const presigned = {
      sender: "alice",
      recipient: "helper",
      mode: "agent-to-agent",
      files: [{ name: "a.bin", size: 3 }],
    };
    expectError(
      await t.call("POST", "/v1/transfers/presigned", { key: a.apiKey, body: presigned }),
      400,
      "AMBIGUOUS_RECIPIENT",
    );
    const toC = await t.call("POST", "/v1/transfers/presigned", {
      key: a.apiKey,
      body: { ...presigned, recipient_account: c.accountId },
    });
    expect(toC.statusCode, toC.body).toBe(201);
  });
});
