import { createHash, randomBytes } from "node:crypto";
import { fromBase64 } from "@handoff/sdk/crypto";
import {
  entryLeafHash,
  type KeyProof,
  openCheckpoint,
  parseVerifierKey,
  verifyInclusion,
} from "@handoff/sdk/transparency";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REQUEST_TOKEN_REQUESTS } from "../../src/rate-limits/policy.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";
import { advanceClock, expectError, registerAgent, registerPending, startOfWindow } from "./helpers.js";
import { FREE, type Parties, pathOf, putUpload, waitUntil } from "./transfer-helpers.js";

let t: TestApp;
let receiver: Receiver;
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: "1" }, service: { webhookAttemptTimeoutMs: 500 } });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await t.close();
});

const HOSTILE = `<script>alert("x")</script><img src=x onerror=alert(1)>`;

interface IssuedLink {
  id: string;
  token: string;
  url: string;
  agent: string;
  title: string;
  message: string | null;
  max_files: number;
  max_total_size: number;
  expires_at: string;
  max_uses: number;
  uses: number;
  status: string;
  created_at: string;
}

interface RequestTransfer {
  transfer_id: string;
  upload_urls: {
    file_id: string;
    file_name: string;
    upload_url: string;
    resumable_url: string;
    headers: Record<string, string>;
  }[];
  confirm_url: string;
}

/** An account on `plan` with an agent "inbox" that has a public key (and a webhook on the receiver). */
async function owner(plan = "free") {
  const account = await t.newAccount(plan);
  const agent = await registerAgent(t, account.apiKey, {
    agent_id: "inbox",
    name: "Invoice inbox",
    webhook_url: `${receiver.url}/hook`,
  });
  return { ...account, agent } as Pick<Parties, "apiKey" | "accountId"> & {
    email: string;
    agent: typeof agent;
  };
}

/** Once a checkpoint covers the agent's key leaf (decisions 9.2: about a second), its proof as GET /v1/agents/{id} shows it. */
async function keysProven(o: { apiKey: string; agent: { id: string } }): Promise<KeyProof> {
  let proof: KeyProof | null = null;
  await waitUntil(async () => {
    const res = await t.call("GET", `/v1/agents/${o.agent.id}`, { key: o.apiKey });
    proof = res.json().key_proof;
    return proof !== null;
  }, "a checkpoint covers the agent's key");
  return proof as unknown as KeyProof;
}

async function createLink(
  key: string,
  body: Record<string, unknown> = {},
  headers: Record<string, string> = {},
) {
  return t.call("POST", "/v1/requests", { key, body: { title: "Your invoice", ...body }, headers });
}

async function linkOk(key: string, body: Record<string, unknown> = {}): Promise<IssuedLink> {
  const res = await createLink(key, body);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as IssuedLink;
}

const byToken = (token: string) => t.call("GET", `/v1/requests/by-token/${token}`);

/** Files as a sender's browser declares them: sizes as uploaded, each with its HOE1 salt. */
function declared(files: { name: string; size: number }[]) {
  return files.map((file) => ({
    ...file,
    content_type: "application/pdf",
    encryption_iv: randomBytes(16).toString("base64"),
  }));
}

const ENCRYPTED_KEY = randomBytes(92).toString("base64");

function postTransfer(token: string, body: Record<string, unknown>): Promise<LightMyRequestResponse> {
  return t.call("POST", `/v1/requests/by-token/${token}/transfers`, {
    body: { encrypted_key: ENCRYPTED_KEY, ...body },
  });
}

/** Sends `data` through the link: declare, upload each file, confirm. Returns the confirm answer too. */
async function sendThrough(token: string, data: Buffer[], extra: Record<string, unknown> = {}) {
  const res = await postTransfer(token, {
    files: declared(data.map((d, i) => ({ name: `file-${i}.pdf`, size: d.length }))),
    ...extra,
  });
  expect(res.statusCode, res.body).toBe(201);
  const created = res.json() as RequestTransfer;
  for (const [i, upload] of created.upload_urls.entries()) {
    const put = await putUpload(t, upload, data[i] as Buffer);
    expect(put.statusCode, put.body).toBe(200);
  }
  const confirmed = await t.app.inject({ method: "POST", url: pathOf(created.confirm_url) });
  return { created, confirmed };
}

/** Every transfer the account holds, in any status (a refused send must leave none). */
async function transferCount(accountId: string): Promise<number> {
  const row = await t.service
    .db("transfers")
    .where({ sender_account_id: accountId })
    .count<{ count: number }[]>("id as count");
  return Number(row[0]?.count ?? 0);
}

describe("POST /v1/requests (decisions 10.1)", () => {
  it("201 with the link, its token shown once and stored only as its SHA-256 digest", async () => {
    const o = await owner();
    const res = await createLink(o.apiKey, { message: "PDF please", max_files: 3, ask_sender_email: true });
    expect(res.statusCode, res.body).toBe(201);
    const link = res.json() as IssuedLink;
    expect(Object.keys(link).sort()).toEqual(
      [
        "agent",
        "created_at",
        "expires_at",
        "id",
        "max_files",
        "max_total_size",
        "max_uses",
        "message",
        "status",
        "title",
        "token",
        "url",
        "uses",
      ].sort(),
    );
    expect(link.token).toMatch(/^hrq_[A-Za-z0-9_-]{32}$/);
    expect(link.url).toBe(`${t.service.config.publicBaseUrl}/r/${link.token}`);
    expect(link).toMatchObject({
      agent: "inbox",
      title: "Your invoice",
      message: "PDF please",
      max_files: 3,
      // Default and ceiling: the free plan's maximum file size; life: 7 days within its 1-day retention.
      max_total_size: FREE.maxFileSize,
      max_uses: 1,
      uses: 0,
      status: "active",
    });
    expect(Date.parse(link.expires_at) - Date.parse(link.created_at)).toBe(FREE.retentionSeconds * 1000);

    // The read model and the log hold the digest, never the token.
    const row = await t.service.db("request_links").where({ id: link.id }).first();
    expect(row.token_hash).toBe(createHash("sha256").update(link.token).digest("hex"));
    const events = await t.service.db.raw("select data::text as data from events where stream_id = ?", [
      `request_link-${link.id}`,
    ]);
    const logged = (events.rows as { data: string }[]).map((r) => r.data).join("");
    expect(logged).not.toContain(link.token);
    expect(logged).toContain(row.token_hash);

    // GET never shows it again.
    const got = await t.call("GET", `/v1/requests/${link.id}`, { key: o.apiKey });
    expect(got.statusCode, got.body).toBe(200);
    expect(got.json()).not.toHaveProperty("token");
    expect(got.body).not.toContain(link.token);
  });

  it("X-Service-Agent or `agent` picks the receiving agent", async () => {
    const o = await owner();
    await registerAgent(t, o.apiKey, { agent_id: "second" });
    const byHeader = await createLink(o.apiKey, {}, { "x-service-agent": "second" });
    expect(byHeader.json().agent).toBe("second");
    expect((await linkOk(o.apiKey, { agent: "second" })).agent).toBe("second");
    expect((await linkOk(o.apiKey)).agent).toBe("inbox");
  });

  it("400 for an agent without a public_key, one that is not the account's, and bad terms", async () => {
    const o = await owner();
    await registerPending(t, o.apiKey, "pending-one");
    expectError(await createLink(o.apiKey, { agent: "pending-one" }), 400, "VALIDATION_ERROR");
    expectError(await createLink(o.apiKey, { agent: "nobody" }), 400, "VALIDATION_ERROR");
    expectError(await createLink(o.apiKey, { title: "" }), 400, "VALIDATION_ERROR");
    expectError(await createLink(o.apiKey, { title: "x".repeat(201) }), 400, "VALIDATION_ERROR");
    expectError(await createLink(o.apiKey, { message: "x".repeat(2001) }), 400, "VALIDATION_ERROR");
    expectError(await createLink(o.apiKey, { max_files: 1001 }), 400, "VALIDATION_ERROR");
    expectError(
      await createLink(o.apiKey, { max_total_size: FREE.maxFileSize + 1 }),
      400,
      "VALIDATION_ERROR",
    );
    // Beyond the free plan's retention of a day: refused, never cut.
    expectError(await createLink(o.apiKey, { expires_in: "7d" }), 400, "VALIDATION_ERROR");
    expectError(
      await createLink(o.apiKey, { agent: "x" }, { "x-service-agent": "ghost" }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await t.call("POST", "/v1/requests", { body: { title: "x" } }), 401, "UNAUTHORIZED");
  });
});

describe("GET and DELETE /v1/requests", () => {
  it("lists the account's links newest first; another account sees none of them (404)", async () => {
    const o = await owner();
    const first = await linkOk(o.apiKey, { title: "first" });
    const second = await linkOk(o.apiKey, { title: "second" });
    const list = await t.call("GET", "/v1/requests", { key: o.apiKey });
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().requests.map((r: IssuedLink) => r.id)).toEqual([second.id, first.id]);
    expect(list.body).not.toContain("hrq_");

    const other = await owner();
    expect((await t.call("GET", "/v1/requests", { key: other.apiKey })).json().requests).toEqual([]);
    expectError(await t.call("GET", `/v1/requests/${first.id}`, { key: other.apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("DELETE", `/v1/requests/${first.id}`, { key: other.apiKey }), 404, "NOT_FOUND");
    expectError(await t.call("GET", "/v1/requests/not-a-uuid", { key: o.apiKey }), 404, "NOT_FOUND");
  });

  it("DELETE revokes: 200 status revoked, then the token answers 410 and no transfer is made", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const res = await t.call("DELETE", `/v1/requests/${link.id}`, { key: o.apiKey });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: link.id, status: "revoked" });
    expectError(await byToken(link.token), 410, "REQUEST_CLOSED");
    expectError(
      await postTransfer(link.token, { files: declared([{ name: "a.pdf", size: 10 }]) }),
      410,
      "REQUEST_CLOSED",
    );
    expect(await transferCount(o.accountId)).toBe(0);
    // Revoking again changes nothing.
    expect((await t.call("DELETE", `/v1/requests/${link.id}`, { key: o.apiKey })).json().status).toBe(
      "revoked",
    );
  });
});

describe("GET /v1/requests/by-token/{token} (decisions 10.2)", () => {
  it("shows the link and the agent's key, never the account, its e-mail or its other agents", async () => {
    const o = await owner();
    await registerAgent(t, o.apiKey, { agent_id: "secret-agent", name: "Hidden" });
    await keysProven(o);
    const link = await linkOk(o.apiKey, { message: "PDF please", ask_sender_name: true });
    const res = await byToken(link.token);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      title: "Your invoice",
      message: "PDF please",
      agent: {
        agent_id: "inbox",
        name: "Invoice inbox",
        public_key: o.agent.public_key,
        key_version: o.agent.key_version,
        key_proof: expect.objectContaining({ entry: expect.objectContaining({ type: "AgentConnected" }) }),
      },
      max_files: 10,
      max_total_size: FREE.maxFileSize,
      expires_at: link.expires_at,
      ask_sender_name: true,
      ask_sender_email: false,
    });
    for (const secret of [o.accountId, o.email, "secret-agent", "Hidden", link.id]) {
      expect(res.body).not.toContain(secret);
    }
  });

  it("carries the log's proof of the agent's key (9.6): its leaf, included in a checkpoint the log key signed", async () => {
    const o = await owner();
    await keysProven(o);
    const link = await linkOk(o.apiKey);
    const { agent } = (await byToken(link.token)).json() as { agent: { key_proof: KeyProof } };
    const proof = agent.key_proof;
    const logKey = parseVerifierKey((await t.call("GET", "/v1/log/key")).json().vkey);
    const checkpoint = openCheckpoint(proof.checkpoint, logKey);
    expect(checkpoint.size).toBe(proof.tree_size);
    expect(proof.entry).toMatchObject({
      type: "AgentConnected",
      stream: `agent-${o.agent.id}`,
      data: { publicKey: o.agent.public_key, keyVersion: o.agent.key_version },
    });
    const hashes = proof.inclusion.map(fromBase64);
    expect(
      verifyInclusion(entryLeafHash(proof.entry), proof.leaf_index, proof.tree_size, hashes, checkpoint.root),
    ).toBe(true);
    // Another agent's leaf does not pass for this one.
    const other = await registerAgent(t, o.apiKey, { agent_id: "other" });
    const otherProof = await keysProven({ ...o, agent: other });
    expect(
      verifyInclusion(
        entryLeafHash(otherProof.entry),
        proof.leaf_index,
        proof.tree_size,
        hashes,
        checkpoint.root,
      ),
    ).toBe(false);
  });

  it("404 for a forged token, a malformed one, and no transfer is made", async () => {
    const o = await owner();
    await linkOk(o.apiKey);
    const forged = `hrq_${randomBytes(24).toString("base64url")}`;
    expectError(await byToken(forged), 404, "NOT_FOUND");
    expectError(await byToken("hrq_short"), 404, "NOT_FOUND");
    expectError(
      await postTransfer(forged, { files: declared([{ name: "a.pdf", size: 10 }]) }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await t.call("POST", `/v1/requests/by-token/${forged}/transfers/tr_abc/confirm`),
      404,
      "NOT_FOUND",
    );
    expect(await transferCount(o.accountId)).toBe(0);
  });

  it("410 once expired (the test clock), with no transfer made", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey, { expires_in: "1h" });
    await advanceClock(t, 3600);
    expectError(await byToken(link.token), 410, "REQUEST_CLOSED");
    expectError(
      await postTransfer(link.token, { files: declared([{ name: "a.pdf", size: 10 }]) }),
      410,
      "REQUEST_CLOSED",
    );
    expect(await transferCount(o.accountId)).toBe(0);
    expect((await t.call("GET", `/v1/requests/${link.id}`, { key: o.apiKey })).json().status).toBe("expired");
  });

  it("429 with Retry-After past 10 requests a minute on one token; another token is not held back", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const other = await linkOk(o.apiKey);
    await startOfWindow(t, REQUEST_TOKEN_REQUESTS.windowMs);
    for (let i = 0; i < REQUEST_TOKEN_REQUESTS.limit; i++)
      expect((await byToken(link.token)).statusCode).toBe(200);
    const limited = await byToken(link.token);
    expectError(limited, 429, "RATE_LIMITED");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(limited.headers["retry-after"])).toBeLessThanOrEqual(60);
    expectError(
      await postTransfer(link.token, { files: declared([{ name: "a.pdf", size: 10 }]) }),
      429,
      "RATE_LIMITED",
    );
    expect((await byToken(other.token)).statusCode).toBe(200);
    await advanceClock(t, 60);
    expect((await byToken(link.token)).statusCode).toBe(200);
  });
});

describe("POST /v1/requests/by-token/{token}/transfers and confirm", () => {
  it("a person sends through the link: the agent's inbox shows a request transfer, the link is used", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey, { ask_sender_name: true, ask_sender_email: true });
    const data = [randomBytes(3000), randomBytes(10)];
    const { created, confirmed } = await sendThrough(link.token, data, {
      sender_name: "Ada Lovelace",
      sender_email: "ada@example.com",
    });
    expect(Object.keys(created).sort()).toEqual(["confirm_url", "transfer_id", "upload_urls"]);
    expect(created.confirm_url).toBe(
      `${t.service.config.publicBaseUrl}/v1/requests/by-token/${link.token}/transfers/${created.transfer_id}/confirm`,
    );
    for (const upload of created.upload_urls) expect(upload.resumable_url).toContain("/v1/uploads/");
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect(confirmed.json()).toEqual({ transfer_id: created.transfer_id, status: "active" });

    const inbox = await t.call("GET", "/v1/transfers/inbox", {
      key: o.apiKey,
      headers: { "x-service-agent": "inbox" },
    });
    const item = inbox.json().transfers.find((x: { id: string }) => x.id === created.transfer_id);
    expect(item).toMatchObject({
      mode: "request",
      request_id: link.id,
      sender: { kind: "link", name: "Ada Lovelace", email: "ada@example.com", verified: false },
      recipient: "inbox",
      status: "active",
      is_encrypted: true,
      file_count: 2,
      total_size: 3010,
    });

    // The agent downloads it like any other: the key material as the sender gave it.
    const download = await t.call("GET", `/v1/transfers/${created.transfer_id}/download`, {
      key: o.apiKey,
      headers: { "x-service-agent": "inbox" },
    });
    expect(download.statusCode, download.body).toBe(200);
    expect(download.json()).toMatchObject({
      is_encrypted: true,
      encrypted_key: ENCRYPTED_KEY,
      recipient_key_version: o.agent.key_version,
      recipient_public_key: o.agent.public_key,
    });

    // One use of one: the link is used, and answers 410 from now on.
    const shown = await t.call("GET", `/v1/requests/${link.id}`, { key: o.apiKey });
    expect(shown.json()).toMatchObject({ uses: 1, status: "used" });
    expectError(await byToken(link.token), 410, "REQUEST_CLOSED");
    const before = await transferCount(o.accountId);
    expectError(
      await postTransfer(link.token, { files: declared([{ name: "b.pdf", size: 10 }]) }),
      410,
      "REQUEST_CLOSED",
    );
    expect(await transferCount(o.accountId)).toBe(before);

    // Confirming again is the same answer and counts nothing more.
    const again = await t.app.inject({ method: "POST", url: pathOf(created.confirm_url) });
    expect(again.statusCode, again.body).toBe(200);
    expect((await t.call("GET", `/v1/requests/${link.id}`, { key: o.apiKey })).json().uses).toBe(1);

    // The sender's name and address are sealed in the log (decisions 6.5).
    const events = await t.service.db.raw("select data::text as data from events where stream_id = ?", [
      `transfer-${created.transfer_id}`,
    ]);
    const logged = (events.rows as { data: string }[]).map((r) => r.data).join("");
    expect(logged).not.toContain("Ada Lovelace");
    expect(logged).not.toContain("ada@example.com");
  });

  it("history: the agent's shows the link's creation, each use and its revocation", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey, { max_uses: 2 });
    const { confirmed } = await sendThrough(link.token, [randomBytes(5)]);
    expect(confirmed.statusCode, confirmed.body).toBe(200);
    expect((await t.call("DELETE", `/v1/requests/${link.id}`, { key: o.apiKey })).statusCode).toBe(200);
    const history = await t.call("GET", `/v1/agents/${o.agent.id}/history`, { key: o.apiKey });
    const types = history.json().entries.map((e: { type: string }) => e.type);
    for (const type of [
      "RequestLinkCreated",
      "TransferCreated",
      "RequestLinkUsed",
      "TransferActivated",
      "RequestLinkRevoked",
    ]) {
      expect(types).toContain(type);
    }
    expect(history.body).not.toContain(link.token);
    expect(history.body).not.toContain("tokenHash");
  });

  it("the webhook transfer.received carries it with the sender opened and marked unverified", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const { created, confirmed } = await sendThrough(link.token, [randomBytes(5)], { sender_name: "Grace" });
    expect(confirmed.statusCode).toBe(200);
    await waitUntil(
      () =>
        receiver.received.some((r) => {
          const body = JSON.parse(r.body);
          return body.type === "transfer.received" && body.data.id === created.transfer_id;
        }),
      "the webhook message arrives",
    );
    const message = receiver.received
      .map((r) => JSON.parse(r.body))
      .find((body) => body.type === "transfer.received" && body.data.id === created.transfer_id);
    expect(message.data).toMatchObject({
      mode: "request",
      request_id: link.id,
      sender: { kind: "link", name: "Grace", email: null, verified: false },
    });
  });

  it("encryption is mandatory: no encrypted_key, or a file without its encryption_iv, is 400", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const noKey = await t.call("POST", `/v1/requests/by-token/${link.token}/transfers`, {
      body: { files: declared([{ name: "a.pdf", size: 10 }]) },
    });
    expectError(noKey, 400, "VALIDATION_ERROR");
    expectError(
      await postTransfer(link.token, { files: [{ name: "a.pdf", size: 10 }] }),
      400,
      "VALIDATION_ERROR",
    );
    expect(await transferCount(o.accountId)).toBe(0);
  });

  it("limits are refused before any byte: too many files 400, too many bytes 413, the plan's size 413", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey, { max_files: 2, max_total_size: 1000 });
    const three = declared([1, 2, 3].map((i) => ({ name: `${i}.pdf`, size: 1 })));
    expectError(await postTransfer(link.token, { files: three }), 400, "VALIDATION_ERROR");
    expectError(
      await postTransfer(link.token, {
        files: declared([
          { name: "a", size: 600 },
          { name: "b", size: 401 },
        ]),
      }),
      413,
      "FILE_TOO_LARGE",
    );
    // A link at the plan's ceiling: one file over the plan's maximum file size.
    const wide = await linkOk(o.apiKey);
    expectError(
      await postTransfer(wide.token, { files: declared([{ name: "big.bin", size: FREE.maxFileSize + 1 }]) }),
      413,
      "FILE_TOO_LARGE",
    );
    expect(await transferCount(o.accountId)).toBe(0);
    expect((await t.call("GET", `/v1/requests/${link.id}`, { key: o.apiKey })).json().uses).toBe(0);
  });

  it("counts against the requesting account's storage quota (413 before any byte)", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey, { max_files: 10, max_uses: 10 });
    // Five files of 50 MB fill the free plan's 250 MB; the sixth cannot fit.
    for (let i = 0; i < 5; i++) {
      const res = await postTransfer(link.token, {
        files: declared([{ name: `${i}.bin`, size: FREE.maxFileSize }]),
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    expectError(
      await postTransfer(link.token, { files: declared([{ name: "over.bin", size: 1 }]) }),
      413,
      "FILE_TOO_LARGE",
    );
  });

  it("confirm: 400 naming missing files; 404 for a transfer of another link; 410 once the link closed", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const other = await linkOk(o.apiKey);
    const res = await postTransfer(link.token, { files: declared([{ name: "a.pdf", size: 10 }]) });
    const created = res.json() as RequestTransfer;
    const confirmUrl = pathOf(created.confirm_url);
    expectError(await t.app.inject({ method: "POST", url: confirmUrl }), 400, "VALIDATION_ERROR");
    expectError(
      await t.call("POST", `/v1/requests/by-token/${other.token}/transfers/${created.transfer_id}/confirm`),
      404,
      "NOT_FOUND",
    );
    expect(
      (await putUpload(t, created.upload_urls[0] as RequestTransfer["upload_urls"][0], randomBytes(10)))
        .statusCode,
    ).toBe(200);
    expect((await t.call("DELETE", `/v1/requests/${link.id}`, { key: o.apiKey })).statusCode).toBe(200);
    expectError(await t.app.inject({ method: "POST", url: confirmUrl }), 410, "REQUEST_CLOSED");
    const transfer = await t.call("GET", `/v1/transfers/${created.transfer_id}`, { key: o.apiKey });
    expect(transfer.json().status).toBe("pending");
  });

  it("a used link takes the second of two transfers declared while it was open only until the first is confirmed", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const first = (
      await postTransfer(link.token, { files: declared([{ name: "a", size: 1 }]) })
    ).json() as RequestTransfer;
    const second = (
      await postTransfer(link.token, { files: declared([{ name: "b", size: 1 }]) })
    ).json() as RequestTransfer;
    for (const created of [first, second]) {
      expect(
        (await putUpload(t, created.upload_urls[0] as RequestTransfer["upload_urls"][0], randomBytes(1)))
          .statusCode,
      ).toBe(200);
    }
    expect((await t.app.inject({ method: "POST", url: pathOf(first.confirm_url) })).statusCode).toBe(200);
    expectError(
      await t.app.inject({ method: "POST", url: pathOf(second.confirm_url) }),
      410,
      "REQUEST_CLOSED",
    );
  });

  it("hostile titles, messages, names and file names are stored and returned as plain data", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey, { title: HOSTILE, message: HOSTILE });
    const shown = await byToken(link.token);
    expect(shown.headers["content-type"]).toMatch(/^application\/json/);
    expect(shown.json()).toMatchObject({ title: HOSTILE, message: HOSTILE });
    const { created } = await sendThrough(link.token, [randomBytes(4)], {
      sender_name: HOSTILE,
      files: declared([{ name: `${HOSTILE.replaceAll("/", "")}.pdf`, size: 4 }]),
    });
    const transfer = await t.call("GET", `/v1/transfers/${created.transfer_id}`, { key: o.apiKey });
    expect(transfer.json().sender.name).toBe(HOSTILE);
    expect(transfer.json().files[0].name).toBe(`${HOSTILE.replaceAll("/", "")}.pdf`);
    const stored = await t.service.db("request_links").where({ id: link.id }).first();
    expect(stored.title).toBe(HOSTILE);
  });

  it("erasing the sender's address erases their name and address on the transfer", async () => {
    const o = await owner();
    const link = await linkOk(o.apiKey);
    const { created } = await sendThrough(link.token, [randomBytes(4)], {
      sender_name: "Eve Example",
      sender_email: "eve@example.com",
    });
    const erased = await t.call("POST", "/v1/admin/erasures", {
      key: ADMIN_TOKEN,
      body: { email: "eve@example.com" },
    });
    expect(erased.statusCode, erased.body).toBe(200);
    expect(erased.json()).toMatchObject({ transfers: 1 });
    const transfer = await t.call("GET", `/v1/transfers/${created.transfer_id}`, { key: o.apiKey });
    expect(transfer.json().sender).toEqual({
      kind: "link",
      name: "[erased]",
      email: "[erased]",
      verified: false,
    });
  });

  it("a mode of `request` cannot be asked for on POST /v1/transfers/presigned", async () => {
    const o = await owner();
    const res = await t.call("POST", "/v1/transfers/presigned", {
      key: o.apiKey,
      body: { mode: "request", sender: "inbox", recipient: "inbox", files: [{ name: "a", size: 1 }] },
    });
    expectError(res, 400, "VALIDATION_ERROR");
  });
});
