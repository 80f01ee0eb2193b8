import { createHash } from "node:crypto";
import { generateEd25519KeyPair, toBase64 } from "@handoff/sdk/crypto";
import { type Receipt, signReceipt } from "@handoff/sdk/transparency";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, registerAgent } from "../http/helpers.js";
import { downloadOk, fetchLink, presignedActive, sendTransfer, waitUntil } from "../http/transfer-helpers.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { type Receiver, startReceiver } from "../support/webhook-receiver.js";

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
const CONTENT = Buffer.from("the quarterly numbers");

interface Setup {
  apiKey: string;
  bobId: string;
  bobSeed: Uint8Array;
}

/** A receipt of `transferId` by bob for the one file he received. */
function receiptOf(setup: Setup, transferId: string, stored: Buffer, name = "numbers.txt"): Receipt {
  return {
    type: "handoff.receipt/v1",
    transfer_id: transferId,
    recipient: setup.bobId,
    sender_signature: null,
    files: [{ name, size: stored.length, sha256: sha256(stored), stored_sha256: sha256(stored) }],
    shield: { level: "standard", verdict: "clean" },
    received_at: new Date().toISOString(),
  };
}

describe("recipient-signed receipts (decisions 9.5)", () => {
  let t: TestApp;
  let receiver: Receiver;
  let setup: Setup;

  beforeAll(async () => {
    t = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: "1" } });
    receiver = await startReceiver();
    const account = await t.newAccount();
    await registerAgent(t, account.apiKey, { agent_id: "alice", webhook_url: receiver.url });
    const keys = generateEd25519KeyPair();
    const bob = await registerAgent(t, account.apiKey, {
      agent_id: "bob",
      signing_public_key: toBase64(keys.publicKey),
    });
    setup = { apiKey: account.apiKey, bobId: bob.id, bobSeed: keys.privateKey };
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  const post = (transferId: string, body: unknown, agent = "bob", key = setup.apiKey) =>
    t.call("POST", `/v1/transfers/${transferId}/receipts`, {
      key,
      body,
      headers: { "x-service-agent": agent },
    });
  const listed = async (transferId: string) => {
    const res = await t.call("GET", `/v1/transfers/${transferId}/receipts`, { key: setup.apiKey });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().receipts as {
      receipt: Receipt;
      signature: string;
      position: string;
      leaf_index: number;
    }[];
  };

  async function received(): Promise<string> {
    const transfer = await sendTransfer(
      t,
      setup.apiKey,
      [{ name: "numbers.txt", data: CONTENT, type: "text/plain" }],
      {
        max_downloads: "5",
      },
    );
    await downloadOk(t, setup.apiKey, transfer.id, "bob");
    return transfer.id;
  }

  it("records a receipt signed by the recipient agent: 201 with its leaf, listed, in history, pushed to the sender", async () => {
    const transferId = await received();
    const receipt = receiptOf(setup, transferId, CONTENT);
    const signature = signReceipt(setup.bobSeed, receipt);
    const res = await post(transferId, { receipt, signature });
    expect(res.statusCode, res.body).toBe(201);
    const { position, leaf_index } = res.json();
    expect(typeof position).toBe("string");
    expect(leaf_index).toEqual(expect.any(Number));

    expect(await listed(transferId)).toEqual([{ receipt, signature, position, leaf_index }]);
    const history = await t.call("GET", `/v1/transfers/${transferId}/history`, { key: setup.apiKey });
    const entry = history.json().entries.find((e: { type: string }) => e.type === "ReceiptRecorded");
    expect(entry).toMatchObject({ position, data: { receipt, signature } });
    const log = await t.call("GET", `/v1/log/entries/${position}`, { key: setup.apiKey });
    expect(log.json()).toMatchObject({
      leaf_index,
      entry: { type: "ReceiptRecorded", data: { receipt, signature } },
    });

    await waitUntil(
      () =>
        receiver.messages().some((m) => m.type === "transfer.receipt" && m.data.transfer_id === transferId),
      "the sender's transfer.receipt webhook",
    );
    const message = receiver.messages().find((m) => m.type === "transfer.receipt");
    expect(message?.data).toEqual({ transfer_id: transferId, receipt, signature, position });
  });

  it("refuses, recording nothing, a bad signature, another agent, a wrong stored hash, or a receipt before any download", async () => {
    const transferId = await received();
    const good = receiptOf(setup, transferId, CONTENT);
    const forged = signReceipt(generateEd25519KeyPair().privateKey, good);
    expectError(await post(transferId, { receipt: good, signature: forged }), 400, "RECEIPT_INVALID");

    const edited = { ...good, shield: null };
    expectError(
      await post(transferId, { receipt: edited, signature: signReceipt(setup.bobSeed, good) }),
      400,
      "RECEIPT_INVALID",
    );

    const asAlice = await post(
      transferId,
      { receipt: good, signature: signReceipt(setup.bobSeed, good) },
      "alice",
    );
    expectError(asAlice, 400, "RECEIPT_INVALID");

    const wrongBytes = receiptOf(setup, transferId, Buffer.from("other bytes"));
    expectError(
      await post(transferId, { receipt: wrongBytes, signature: signReceipt(setup.bobSeed, wrongBytes) }),
      400,
      "RECEIPT_INVALID",
    );

    const stranger = await t.newAccount();
    await registerAgent(t, stranger.apiKey, { agent_id: "mallory" });
    const foreign = await post(
      transferId,
      { receipt: good, signature: signReceipt(setup.bobSeed, good) },
      "mallory",
      stranger.apiKey,
    );
    expectError(foreign, 403, "FORBIDDEN");

    const unread = await sendTransfer(t, setup.apiKey, [
      { name: "numbers.txt", data: CONTENT, type: "text/plain" },
    ]);
    const early = receiptOf(setup, unread.id, CONTENT);
    expectError(
      await post(unread.id, { receipt: early, signature: signReceipt(setup.bobSeed, early) }),
      400,
      "RECEIPT_INVALID",
    );

    expect(await listed(transferId)).toEqual([]);
    expect(await listed(unread.id)).toEqual([]);
    expectError(
      await post(transferId, { receipt: { ...good, extra: 1 }, signature: forged }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("checks a presigned transfer's receipt against the hashes its confirm read back", async () => {
    const { transfer } = await presignedActive(t, setup.apiKey, [{ name: "numbers.txt", data: CONTENT }], {
      max_downloads: 5,
    });
    const download = await downloadOk(t, setup.apiKey, transfer.id, "bob");
    const fetched = await fetchLink(t, download.files[0]?.download_url ?? "");
    expect(fetched.rawPayload.equals(CONTENT)).toBe(true);
    const receipt = receiptOf(setup, transfer.id, fetched.rawPayload);
    expect(
      (await post(transfer.id, { receipt, signature: signReceipt(setup.bobSeed, receipt) })).statusCode,
    ).toBe(201);
  });
});
