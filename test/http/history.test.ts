import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { dumpReadModels } from "../support/read-models.js";
import { advanceClock, allKeys, expectError, registerPending, wellFormedUnknownKey } from "./helpers.js";
import { downloadOk, newParties, sendTransfer, waitUntil, withoutHousekeeper } from "./transfer-helpers.js";

interface Entry {
  position: string;
  type: string;
  at: string;
  actor: { kind: string; account_id: string | null; agent_id: string | null; key_id: string | null };
  data: Record<string, unknown>;
}

/** Field names that would be a secret in an entry (decisions 6.1). */
const SECRET_KEYS = [
  "keyHash",
  "sealedKey",
  "tokenHash",
  "ticket",
  "atRest",
  "wrappedDataKey",
  "encryptedKey",
];

async function historyOf(t: TestApp, key: string, path: string): Promise<Entry[]> {
  const res = await t.call("GET", path, { key });
  expect(res.statusCode, res.body).toBe(200);
  expect(Object.keys(res.json())).toEqual(["entries"]);
  return res.json().entries;
}

async function audit(t: TestApp, key: string, query = "") {
  const res = await t.call("GET", `/v1/audit${query ? `?${query}` : ""}`, { key });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { entries: Entry[]; next_cursor: string | null; has_more: boolean };
}

const sorted = (entries: Entry[]) =>
  entries.map((e) => e.position).every((p, i, all) => i === 0 || (all[i - 1] ?? "") < p);

describe("history, audit and compliance reports (decisions 6.1–6.4)", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("a transfer's history: creation, every download with its agent, deletion; in log order, no secrets", async () => {
    const { apiKey, keyId, accountId, alice, bob } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey, undefined, { max_downloads: "3" });
    await downloadOk(t, apiKey, transfer.id, "bob");
    await downloadOk(t, apiKey, transfer.id);
    expect((await t.call("DELETE", `/v1/transfers/${transfer.id}`, { key: apiKey })).statusCode).toBe(200);

    const entries = await historyOf(t, apiKey, `/v1/transfers/${transfer.id}/history`);
    expect(entries.map((e) => e.type)).toEqual([
      "TransferCreated",
      "DownloadRecorded",
      "DownloadRecorded",
      "TransferDeleted",
    ]);
    expect(sorted(entries)).toBe(true);
    expect(entries[0]).toMatchObject({
      actor: { kind: "api_key", account_id: accountId, key_id: keyId, agent_id: null },
      data: {
        transferId: transfer.id,
        senderAgentId: alice.id,
        recipientAgentId: bob.id,
        mode: "agent-to-agent",
      },
    });
    expect(entries[1]?.data).toMatchObject({ downloads: 1, downloaderAgentId: bob.id });
    expect(Date.parse(entries[0]?.at ?? "")).not.toBeNaN();
    for (const secret of SECRET_KEYS) expect(allKeys(entries)).not.toContain(secret);
    for (const entry of entries)
      expect(Object.keys(entry).sort()).toEqual(["actor", "at", "data", "position", "type"]);
  });

  it("shows expiry and the purge of file data by the housekeeper as the system's doing", async () => {
    const { apiKey } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey, undefined, { expires_in: "1h" });
    await advanceClock(t, 3601);
    await waitUntil(async () => {
      const entries = await historyOf(t, apiKey, `/v1/transfers/${transfer.id}/history`);
      return entries.some((e) => e.type === "TransferFilesDeleted");
    }, "the housekeeper expired the transfer and purged its files");
    const entries = await historyOf(t, apiKey, `/v1/transfers/${transfer.id}/history`);
    expect(entries.map((e) => e.type)).toEqual([
      "TransferCreated",
      "TransferExpired",
      "TransferFilesDeleted",
    ]);
    expect(entries[1]?.actor).toEqual({ kind: "system", account_id: null, agent_id: null, key_id: null });
  });

  it("a transfer's history is 404 for an account that may not see it, for an unknown id, and 401 without a key", async () => {
    const { apiKey } = await newParties(t);
    const transfer = await sendTransfer(t, apiKey);
    const stranger = await t.newAccount();
    expectError(
      await t.call("GET", `/v1/transfers/${transfer.id}/history`, { key: stranger.apiKey }),
      404,
      "NOT_FOUND",
    );
    expectError(await t.call("GET", "/v1/transfers/tr_unknown/history", { key: apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("GET", `/v1/transfers/${transfer.id}/history`), 401, "UNAUTHORIZED");
    expectError(
      await t.call("GET", `/v1/transfers/${transfer.id}/history`, { key: wellFormedUnknownKey() }),
      401,
      "UNAUTHORIZED",
    );
  });

  it("an agent's history: its life (the connection token's doing included) and its transfers; 404 for others", async () => {
    const { apiKey, accountId, alice, bob } = await newParties(t, "builder");
    const pending = await registerPending(t, apiKey, "carol");
    await t.call("POST", "/v1/agents/connect", {
      key: pending.connection_token,
      body: { public_key: Buffer.alloc(32, 7).toString("base64") },
    });
    const transfer = await sendTransfer(t, apiKey);
    await downloadOk(t, apiKey, transfer.id, "bob");
    await t.call("PATCH", `/v1/agents/${alice.id}`, { key: apiKey, body: { description: "sends things" } });

    const aliceEntries = await historyOf(t, apiKey, `/v1/agents/${alice.id}/history`);
    expect(aliceEntries.map((e) => e.type)).toEqual([
      "AgentRegistered",
      "AgentConnected",
      "TransferCreated",
      "DownloadRecorded",
      "AgentUpdated",
    ]);
    const bobEntries = await historyOf(t, apiKey, `/v1/agents/${bob.id}/history`);
    expect(bobEntries.filter((e) => e.type === "DownloadRecorded")).toHaveLength(1);

    const carol = await historyOf(t, apiKey, `/v1/agents/${pending.id}/history`);
    expect(carol.map((e) => [e.type, e.actor.kind])).toEqual([
      ["AgentRegistered", "api_key"],
      ["AgentConnected", "connection_token"],
    ]);
    expect(carol[1]?.actor).toMatchObject({ account_id: accountId, agent_id: pending.id, key_id: null });
    // The two-step registration's token is recorded as a digest and never shown.
    expect(allKeys(carol)).not.toContain("tokenHash");
    expect(allKeys(carol)).not.toContain("ticket");

    const stranger = await t.newAccount();
    expectError(
      await t.call("GET", `/v1/agents/${alice.id}/history`, { key: stranger.apiKey }),
      404,
      "NOT_FOUND",
    );
    expectError(await t.call("GET", "/v1/agents/not-a-uuid/history", { key: apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("GET", `/v1/agents/${alice.id}/history`), 401, "UNAUTHORIZED");
  });

  it("the audit feed: only the account's own entries, paged by cursor to the same list, filtered by type and time", async () => {
    const { apiKey, accountId } = await newParties(t);
    const other = await newParties(t);
    await sendTransfer(t, other.apiKey);
    const transfer = await sendTransfer(t, apiKey);
    await downloadOk(t, apiKey, transfer.id, "bob");
    const key = await t.call("POST", "/v1/api-keys", { key: apiKey, body: { name: "ci" } });
    await t.call("DELETE", `/v1/accounts/${accountId}/api-keys/${key.json().id}`, { key: apiKey });

    const all = await audit(t, apiKey);
    expect(all.has_more).toBe(false);
    expect(sorted(all.entries)).toBe(true);
    const types = all.entries.map((e) => e.type);
    expect(types.slice(0, 3)).toEqual(["AccountEmailClaimed", "AccountCreated", "ApiKeyAdded"]);
    for (const type of [
      "AgentRegistered",
      "TransferCreated",
      "TransferCounted",
      "DownloadRecorded",
      "ApiKeyRevoked",
    ]) {
      expect(types).toContain(type);
    }
    expect(all.entries.every((e) => JSON.stringify(e).includes(other.accountId) === false)).toBe(true);
    for (const secret of SECRET_KEYS) expect(allKeys(all.entries)).not.toContain(secret);
    const created = all.entries.find((e) => e.type === "AccountCreated");
    expect(created?.actor.kind).toBe("admin");
    expect(created?.data.email).toMatch(/^user\d+-[0-9a-f]+@example\.com$/);

    const paged: Entry[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 50; pages++) {
      const page = await audit(t, apiKey, `limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.entries.length).toBeLessThanOrEqual(2);
      paged.push(...page.entries);
      cursor = page.next_cursor;
      if (!page.has_more) break;
    }
    expect(paged).toEqual(all.entries);
    const end = await audit(t, apiKey, `cursor=${cursor}`);
    expect(end).toEqual({ entries: [], next_cursor: cursor, has_more: false });

    const filtered = await audit(t, apiKey, "type=ApiKeyCreated&type=ApiKeyRevoked");
    expect(filtered.entries.map((e) => e.type)).toEqual(["ApiKeyCreated", "ApiKeyCreated", "ApiKeyRevoked"]);

    const middle = all.entries[Math.floor(all.entries.length / 2)] as Entry;
    const from = await audit(t, apiKey, `from=${encodeURIComponent(middle.at)}`);
    expect(from.entries.every((e) => e.at >= middle.at)).toBe(true);
    const before = await audit(t, apiKey, `to=${encodeURIComponent(middle.at)}`);
    expect(before.entries.every((e) => e.at < middle.at)).toBe(true);
    expect(from.entries.length + before.entries.length).toBe(all.entries.length);
  });

  it("the audit feed refuses a bad limit, cursor, time or range with the one error body", async () => {
    const { apiKey } = await t.newAccount();
    for (const query of [
      "limit=0",
      "limit=1001",
      "limit=ten",
      "cursor=not-a-cursor!",
      "from=yesterday",
      "to=2026-13-01T00:00:00Z",
      "from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z",
    ]) {
      expectError(await t.call("GET", `/v1/audit?${query}`, { key: apiKey }), 400, "VALIDATION_ERROR");
    }
    expect((await audit(t, apiKey, "limit=1000")).entries.length).toBeGreaterThan(0);
    expectError(await t.call("GET", "/v1/audit"), 401, "UNAUTHORIZED");
  });

  it("the compliance report: the month's counts at a stated head, the same bytes twice, and as CSV", async () => {
    const { apiKey, accountId, alice, bob } = await newParties(t);
    const first = await sendTransfer(t, apiKey, [{ name: "a.txt", data: Buffer.alloc(100) }]);
    await sendTransfer(t, apiKey, [{ name: "b.txt", data: Buffer.alloc(50) }], { max_downloads: "1" });
    await downloadOk(t, apiKey, first.id, "bob");
    await t.call("DELETE", `/v1/transfers/${first.id}`, { key: apiKey });
    // The housekeeper's purge of the deleted transfer's files is an event too: let it land before
    // the reports, so that all of them are taken at the same head.
    await waitUntil(async () => {
      const entries = await historyOf(t, apiKey, `/v1/transfers/${first.id}/history`);
      return entries.some((e) => e.type === "TransferFilesDeleted");
    }, "the housekeeper purged the deleted transfer's files");
    const month = first.created_at.slice(0, 7);

    const one = await t.call("GET", `/v1/reports/compliance?month=${month}`, { key: apiKey });
    expect(one.statusCode, one.body).toBe(200);
    const report = one.json();
    expect(report).toMatchObject({
      account_id: accountId,
      month,
      transfers: { created: 2, downloaded: 0, expired: 0, deleted: 1, bytes_uploaded: 150, downloads: 1 },
      api_keys: { created: 1, revoked: 0 },
      connections: { requested: 0, accepted: 0, declined: 0, revoked: 0 },
      erasures: 0,
    });
    expect(report.by_agent).toEqual(
      [
        { agent_id: alice.id, sent: 2, received: 0, downloads: 0, bytes_uploaded: 150 },
        { agent_id: bob.id, sent: 0, received: 2, downloads: 1, bytes_uploaded: 0 },
      ].sort((a, b) => (a.agent_id < b.agent_id ? -1 : 1)),
    );
    expect(typeof report.head_position).toBe("string");
    expect(Date.parse(report.generated_at)).not.toBeNaN();
    const two = await t.call("GET", `/v1/reports/compliance?month=${month}`, { key: apiKey });
    expect(two.body).toBe(one.body);

    const csv = await t.call("GET", `/v1/reports/compliance?month=${month}`, {
      key: apiKey,
      headers: { accept: "text/csv" },
    });
    expect(csv.statusCode).toBe(200);
    expect(csv.headers["content-type"]).toMatch(/^text\/csv/);
    const lines = csv.body.trim().split("\n");
    expect(lines[0]).toBe("metric,value");
    expect(lines).toContain(`account_id,${accountId}`);
    expect(lines).toContain(`head_position,${report.head_position}`);
    expect(lines).toContain("transfers.created,2");
    expect(lines).toContain("transfers.bytes_uploaded,150");
    expect(lines).toContain(`by_agent.${bob.id}.downloads,1`);
    expect(lines).toContain("erasures,0");
    const again = await t.call("GET", `/v1/reports/compliance?month=${month}`, {
      key: apiKey,
      headers: { accept: "text/csv" },
    });
    expect(again.body).toBe(csv.body);

    const empty = (await t.call("GET", "/v1/reports/compliance?month=2001-01", { key: apiKey })).json();
    expect(empty.transfers.created).toBe(0);
    expect(empty.by_agent).toEqual([]);
  });

  it("the compliance report refuses a missing or malformed month with the one error body", async () => {
    const { apiKey } = await t.newAccount();
    for (const query of [
      "",
      "?month=2026-13",
      "?month=2026-1",
      "?month=26-01",
      "?month=2026-01-01",
      "?month=now",
    ]) {
      expectError(
        await t.call("GET", `/v1/reports/compliance${query}`, { key: apiKey }),
        400,
        "VALIDATION_ERROR",
      );
    }
    expectError(await t.call("GET", "/v1/reports/compliance?month=2026-01"), 401, "UNAUTHORIZED");
  });

  it("rebuilds the history read model to identical rows, and answers the same after", async () => {
    const { apiKey, alice } = await newParties(t);
    await sendTransfer(t, apiKey);
    await withoutHousekeeper(t, async () => {
      // The log stands still: what is compared is the read models before and after, nothing else.
      await t.service.engine.waitFor(await t.service.store.headPosition(), 5000);
      const before = await dumpReadModels(t.service.db);
      const answer = (await t.call("GET", `/v1/agents/${alice.id}/history`, { key: apiKey })).body;
      await t.service.engine.stop();
      for (const { name } of projections) await t.service.engine.rebuild(name, () => {});
      expect(await dumpReadModels(t.service.db)).toEqual(before);
      await t.service.engine.start();
      expect((await t.call("GET", `/v1/agents/${alice.id}/history`, { key: apiKey })).body).toBe(answer);
    });
  });
});
