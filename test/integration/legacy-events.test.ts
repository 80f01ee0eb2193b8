import { randomBytes, randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EventMetadata } from "../../domain/recorded-event.js";
import { streams } from "../../domain/streams.js";
import { NO_STREAM } from "../../src/eventstore/port.js";
import { sha256Hex } from "../../src/security/secrets.js";
import { expectError } from "../http/helpers.js";
import { listTransfers, newParties } from "../http/transfer-helpers.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";

const AT = "2026-11-01T10:00:00.000Z";

/** Metadata as version 1 wrote it: no actor kind, no request id. */
const version1 = (accountId: string | null, keyId: string | null = null) =>
  ({ schemaVersion: 1, occurredAt: AT, accountId, keyId, agentId: null }) as unknown as EventMetadata;

const event = (type: string, data: Record<string, unknown>, metadata: EventMetadata) => ({
  eventId: randomUUID(),
  type,
  data,
  metadata,
});

/**
 * Events written before metadata version 2 and before personal data was sealed: they still read
 * (upcast), show in history, and an erasure still hides their personal data everywhere it is
 * shown, though the log itself keeps what was written in clear (docs/design.md says so).
 */
describe("events in the shapes written before history and erasure existed", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("read through the upcasters, show in history, and are hidden by an erasure", async () => {
    const tag = randomBytes(4).toString("hex");
    const email = `Old.Timer-${tag}@example.com`;
    const accountId = randomUUID();
    const position = await t.service.store.appendMany([
      {
        streamId: streams.accountEmail(sha256Hex(email.toLowerCase())),
        expected: NO_STREAM,
        events: [event("AccountEmailClaimed", { accountId }, version1(accountId))],
      },
      {
        streamId: streams.account(accountId),
        expected: NO_STREAM,
        events: [
          event(
            "AccountCreated",
            { accountId, email, name: `Old Timer ${tag}`, plan: "free", createdAt: AT },
            version1(accountId),
          ),
        ],
      },
    ]);
    // An agent-to-human transfer to the same person, its recipient in clear, from a live account.
    const sender = await newParties(t);
    const transferId = `tr_${randomBytes(12).toString("hex").slice(0, 24)}`;
    const sent = await t.service.store.append(streams.transfer(transferId), NO_STREAM, [
      event(
        "TransferCreated",
        {
          transferId,
          status: "pending_recipient",
          pendingReason: "recipient_not_registered",
          atRest: null,
          mode: "agent-to-human",
          sender: "alice",
          senderAccountId: sender.accountId,
          senderAgentId: sender.alice.id,
          recipient: email,
          recipientAccountId: null,
          recipientAgentId: null,
          maxDownloads: 1,
          autoDelete: true,
          isEncrypted: false,
          message: null,
          metadata: {},
          expiresAt: "2099-01-01T00:00:00.000Z",
          files: [{ fileId: randomUUID(), name: "old.txt", size: 3, type: "text/plain", encryptionIv: null }],
          encryption: {
            encryptedKey: null,
            algorithm: null,
            senderSignature: null,
            recipientKeyVersion: null,
            senderPublicKey: null,
            recipientPublicKey: null,
          },
          createdAt: AT,
        },
        version1(sender.accountId, sender.keyId),
      ),
    ]);
    await t.service.engine.waitFor(
      sent.position > position.position ? sent.position : position.position,
      5000,
    );

    // Upcast on the way out of the store: the actor's kind is inferred, the new fields are null.
    const [created] = await t.service.store.readStream(streams.account(accountId));
    expect(created?.metadata).toEqual({
      schemaVersion: 1,
      occurredAt: AT,
      actorKind: "admin",
      accountId,
      keyId: null,
      agentId: null,
      requestId: null,
    });
    expect(created?.data.personId).toBeNull();
    const history = await t.call("GET", `/v1/transfers/${transferId}/history`, { key: sender.apiKey });
    expect(history.json().entries).toEqual([
      expect.objectContaining({
        type: "TransferCreated",
        at: AT,
        actor: { kind: "api_key", account_id: sender.accountId, agent_id: null, key_id: sender.keyId },
        data: expect.objectContaining({ recipient: email }),
      }),
    ]);
    // The clear address of an account made before sealing is still found (case-insensitively).
    expectError(
      await t.call("POST", "/v1/admin/accounts", { key: ADMIN_TOKEN, body: { email: email.toUpperCase() } }),
      409,
      "ACCOUNT_EXISTS",
    );

    const erased = await t.call("POST", "/v1/admin/erasures", { key: ADMIN_TOKEN, body: { email } });
    expect(erased.statusCode, erased.body).toBe(200);
    expect(erased.json()).toMatchObject({ account_id: accountId, transfers: 1 });

    const shown = await listTransfers(t, sender.apiKey);
    expect(shown.transfers.find((x) => x.id === transferId)?.recipient).toBe("[erased]");
    const after = await t.call("GET", `/v1/transfers/${transferId}/history`, { key: sender.apiKey });
    expect(after.json().entries[0].data.recipient).toBe("[erased]");
    const row = await t.service.db("accounts").where({ id: accountId }).first();
    expect(row).toMatchObject({ email: "[erased]", name: "[erased]" });
    const entries = await t.service.db("history_entries").select("data");
    expect(JSON.stringify(entries).toLowerCase()).not.toContain(email.toLowerCase());
    // The legacy claim is released: the address may be used again.
    const again = await t.call("POST", "/v1/admin/accounts", { key: ADMIN_TOKEN, body: { email } });
    expect(again.statusCode, again.body).toBe(201);
  });
});
