import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import {
  createDecryptStream,
  createEncryptStream,
  encryptedSize,
  type KeyPair,
  toBase64,
  unwrapContentKey,
  wrapContentKey,
} from "@handoff/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
import { blobKey } from "../../src/blobs/keys.js";
import { appendAll, toAppend } from "../../src/command-handlers/streams.js";
import { LEGACY_DATA_KEY_PURPOSE } from "../../src/command-handlers/transfers/activate.js";
import { newFileId, newTransferId } from "../../src/command-handlers/transfers/upload.js";
import { NO_STREAM } from "../../src/eventstore/port.js";
import { seal } from "../../src/security/secrets.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { EncryptRecords } from "../support/legacy-at-rest.js";
import { dumpReadModels } from "../support/read-models.js";
import { advanceClock, expectError, startOfWindow } from "./helpers.js";
import { mailsTo, mailTo, newEmail, newPerson, setReceivingKey } from "./people.js";
import {
  blobDir,
  blobFiles,
  bytes,
  type DownloadBody,
  downloadOk,
  fetchLink,
  newParties,
  postPresigned,
  postTransfer,
  type TransferBody,
} from "./transfer-helpers.js";

const toHuman = (recipient: string) => ({ sender: "alice", recipient, mode: "agent-to-human" });

/** Opens what a person downloaded, as the browser does: unwrap K (5.2), decrypt each file (5.3). */
async function openDownload(t: TestApp, body: DownloadBody, keys: KeyPair): Promise<Buffer[]> {
  expect(body.encrypted_key).toEqual(expect.any(String));
  const contentKey = await unwrapContentKey(body.encrypted_key as string, keys.privateKey);
  return Promise.all(
    body.files.map(async (file) => {
      const stored = (await fetchLink(t, file.download_url)).rawPayload;
      const plain = new Blob([stored])
        .stream()
        .pipeThrough(createDecryptStream(contentKey, file.encryption_iv as string));
      return Buffer.from(await new Response(plain).arrayBuffer());
    }),
  );
}

async function received(t: TestApp, session: string): Promise<TransferBody[]> {
  const res = await t.call("GET", "/v1/transfers?direction=received", { key: session });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().transfers;
}

/** Decisions 4.5–4.7: transfers between agents and people. */
describe("agent-to-human and human-to-agent transfers", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("holds files for someone without an account in the format of 5.3 under a held key, and invites them", async () => {
    const { apiKey } = await newParties(t);
    const email = newEmail();
    const secret = Buffer.concat([
      Buffer.from("plain text the server must not keep in clear "),
      bytes(200_000),
    ]);
    const res = await postTransfer(t, apiKey, [{ name: "report.pdf", data: secret }], {
      ...toHuman(email),
      message: "your report",
    });
    expect(res.statusCode, res.body).toBe(201);
    const transfer = res.json() as TransferBody;
    expect(transfer).toMatchObject({
      status: "pending_recipient",
      pending_reason: "recipient_not_registered",
      recipient: email,
      is_encrypted: true,
      files: [{ name: "report.pdf", size: encryptedSize(secret.length) }],
    });
    const [stored] = blobFiles(t, transfer.id);
    const onDisk = readFileSync(join(blobDir(t, transfer.id), stored as string));
    expect(onDisk.subarray(0, 4).toString()).toBe("HOE1");
    expect(onDisk.length).toBe(encryptedSize(secret.length));
    expect(onDisk.includes(secret.subarray(0, 40))).toBe(false);

    // K is held outside the log, sealed; the log has no key for it.
    const held = await t.service.transferDeps.heldKeys.get(transfer.id);
    expect(held?.length).toBe(32);
    const log = JSON.stringify(await t.service.store.readStream(`transfer-${transfer.id}`));
    expect(log).not.toContain("wrappedDataKey");
    expect(log).not.toContain(toBase64(held as Uint8Array));

    const invite = await mailTo(t, email, "invite");
    expect(invite).toContain("your report");
    expect(invite).toContain(`/signup?email=${encodeURIComponent(email)}`);
  });

  it("activates every held transfer when the person sets a receiving key: a key wrap, no byte rewritten", async () => {
    const { apiKey } = await newParties(t);
    const email = newEmail();
    const one = bytes(70_000);
    const two = Buffer.from("second file");
    const sent = (
      await postTransfer(
        t,
        apiKey,
        [
          { name: "one.bin", data: one },
          { name: "two.txt", data: two },
        ],
        toHuman(email),
      )
    ).json() as TransferBody;
    const blobPath = join(blobDir(t, sent.id), blobFiles(t, sent.id)[0] as string);
    const before = readFileSync(blobPath);

    const person = await newPerson(t, email);
    // Held for their address: they see it, waiting, and cannot download it yet.
    expect((await received(t, person.session)).map((tr) => [tr.id, tr.status])).toEqual([
      [sent.id, "pending_recipient"],
    ]);
    expectError(
      await t.call("GET", `/v1/transfers/${sent.id}/download`, { key: person.session }),
      404,
      "NOT_FOUND",
    );

    const keys = await setReceivingKey(t, person.session);
    const now = (await t.call("GET", `/v1/transfers/${sent.id}`, { key: person.session })).json();
    expect(now).toMatchObject({ status: "active", pending_reason: null, is_encrypted: true });
    expect(readFileSync(blobPath).equals(before)).toBe(true);
    expect(await t.service.transferDeps.heldKeys.get(sent.id)).toBeNull();
    const types = (await t.service.store.readStream(`transfer-${sent.id}`)).map((e) => e.type);
    expect(types).toEqual([
      "TransferCreated",
      "ContentKeyWrapped",
      "TransferActivated",
      "HeldContentKeyDestroyed",
    ]);

    const body = await downloadOk(t, person.session, sent.id);
    expect(body).toMatchObject({
      is_encrypted: true,
      encryption_algorithm: "AES-256-GCM",
      recipient_key_version: 1,
    });
    expect(body.recipient_public_key).toBe(toBase64(keys.publicKey));
    const [gotOne, gotTwo] = await openDownload(t, body, keys);
    expect(gotOne?.equals(one)).toBe(true);
    expect(gotTwo?.equals(two)).toBe(true);
    expect(await mailTo(t, email, "files-ready")).toContain("/inbox");
    // The sender's side may not download it.
    expectError(await t.call("GET", `/v1/transfers/${sent.id}/download`, { key: apiKey }), 403, "FORBIDDEN");
  });

  it("nudges a person without a receiving key, and sends straight to one with a key (files-ready at once)", async () => {
    const { apiKey } = await newParties(t);
    const person = await newPerson(t);
    const held = (
      await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(person.email))
    ).json();
    expect(held).toMatchObject({
      status: "pending_recipient",
      pending_reason: "recipient_has_no_receiving_key",
    });
    await mailTo(t, person.email, "nudge");
    expect(mailsTo(t, person.email, "invite")).toEqual([]);

    const keys = await setReceivingKey(t, person.session);
    await mailTo(t, person.email, "files-ready");
    const data = bytes(1000);
    const res = await postTransfer(t, apiKey, [{ name: "b.bin", data }], toHuman(person.email.toUpperCase()));
    expect(res.statusCode, res.body).toBe(201);
    const active = res.json() as TransferBody;
    expect(active).toMatchObject({ status: "active", pending_reason: null, is_encrypted: true });
    expect(await t.service.transferDeps.heldKeys.get(active.id)).toBeNull();
    await mailTo(t, person.email, "files-ready", 2);
    const [got] = await openDownload(t, await downloadOk(t, person.session, active.id), keys);
    expect(got?.equals(data)).toBe(true);
  });

  it("resolves a person's receiving key for an account that sent to them or is connected; 404 otherwise", async () => {
    const sender = await newParties(t);
    const stranger = await newParties(t);
    const person = await newPerson(t);
    const resolve = (key: string, email = person.email) =>
      t.call("GET", `/v1/agents/resolve?agent_id=${encodeURIComponent(email)}`, { key });
    await postTransfer(t, sender.apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(person.email));
    // No receiving key yet: nobody resolves them.
    expectError(await resolve(sender.apiKey), 404, "NOT_FOUND");
    const keys = await setReceivingKey(t, person.session);
    const res = await resolve(sender.apiKey);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      agent_id: person.email,
      public_key: toBase64(keys.publicKey),
      public_key_algorithm: "X25519",
      key_version: 1,
      signing_public_key: null,
      connection_status: "connected",
      key_proof: null,
    });
    expectError(await resolve(stranger.apiKey), 404, "NOT_FOUND");
    expectError(await resolve(stranger.apiKey, newEmail()), 404, "NOT_FOUND");

    // A connection makes them resolvable too.
    const invite = await t.call("POST", "/v1/connections", {
      key: stranger.apiKey,
      body: { account: person.email },
    });
    expect(invite.statusCode, invite.body).toBe(201);
    const accepted = await t.call("POST", `/v1/connections/${invite.json().id}/accept`, {
      key: person.session,
    });
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect((await resolve(stranger.apiKey)).statusCode).toBe(200);

    // What a client encrypts to the resolved key arrives active and opens with the person's key.
    const contentKey = crypto.getRandomValues(new Uint8Array(32));
    const plain = bytes(5000);
    const { encryptionIv, stream } = createEncryptStream(contentKey);
    const wire = Buffer.from(
      await new Response(new Blob([plain]).stream().pipeThrough(stream)).arrayBuffer(),
    );
    const encrypted = await postTransfer(t, stranger.apiKey, [{ name: "c.bin", data: wire }], {
      ...toHuman(person.email),
      is_encrypted: "true",
      encrypted_key: await wrapContentKey(contentKey, keys.publicKey),
      recipient_key_version: "1",
      encryption_iv: encryptionIv,
    });
    expect(encrypted.statusCode, encrypted.body).toBe(201);
    expect(encrypted.json().status).toBe("active");
    const [got] = await openDownload(t, await downloadOk(t, person.session, encrypted.json().id), keys);
    expect(got?.equals(plain)).toBe(true);
    // Encrypted by the client to someone without a key cannot be: 400.
    expectError(
      await postTransfer(t, stranger.apiKey, [{ name: "d.bin", data: wire }], {
        ...toHuman(newEmail()),
        is_encrypted: "true",
        encrypted_key: "AAAA",
      }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("lets a person send to an agent of an account that sent to them, as their own address", async () => {
    const sender = await newParties(t);
    const other = await newParties(t);
    const person = await newPerson(t);
    const toAgent = { sender: person.email, recipient: "bob", mode: "human-to-agent", is_encrypted: "true" };
    // Nobody has sent to them: the agent is out of reach.
    expectError(
      await postTransfer(t, person.session, [{ name: "x.bin", data: bytes(10) }], toAgent),
      400,
      "VALIDATION_ERROR",
    );
    await postTransfer(t, sender.apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(person.email));
    const res = await postTransfer(t, person.session, [{ name: "x.bin", data: bytes(10) }], {
      ...toAgent,
      encrypted_key: "AAAA",
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({
      mode: "human-to-agent",
      sender: person.email,
      recipient: "bob",
      status: "active",
    });
    const agentSide = await downloadOk(t, sender.apiKey, res.json().id, "bob");
    expect(agentSide.recipient_public_key).toBe(sender.bob.public_key);
    // Another sender name, or an agent of an account that never sent to them: 400.
    expectError(
      await postTransfer(t, person.session, [{ name: "x.bin", data: bytes(10) }], {
        ...toAgent,
        sender: "someone@else.org",
      }),
      400,
      "VALIDATION_ERROR",
    );
    const resolved = await t.call("GET", "/v1/agents/resolve?agent_id=bob", { key: person.session });
    expect(resolved.json().public_key).toBe(sender.bob.public_key);
    const sendable = (await t.call("GET", "/v1/agents/sendable", { key: person.session })).json().agents;
    expect(sendable.map((a: { agent_id: string }) => a.agent_id).sort()).toEqual(["alice", "bob"]);
    expect(other.accountId).not.toBe(sender.accountId);
  });

  it("allows 5 invitations a UTC day per account, then 429 INVITE_RATE_LIMIT until the next day", async () => {
    const { apiKey } = await newParties(t, "builder");
    await startOfWindow(t, 24 * 3600_000);
    for (let i = 0; i < 5; i++) {
      const res = await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(newEmail()));
      expect(res.statusCode, res.body).toBe(201);
    }
    expectError(
      await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(newEmail())),
      429,
      "INVITE_RATE_LIMIT",
    );
    // Sends to a person with an account are no invitations.
    const person = await newPerson(t);
    expect(
      (await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(person.email))).statusCode,
    ).toBe(201);
    await advanceClock(t, 24 * 3600);
    expect(
      (await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(newEmail()))).statusCode,
    ).toBe(201);
  });

  it("refuses a recipient that is not an address, a sender that is not its agent, and presigned to someone without a key", async () => {
    const { apiKey } = await newParties(t);
    const file = [{ name: "a.txt", data: bytes(10) }];
    expectError(await postTransfer(t, apiKey, file, toHuman("carol")), 400, "VALIDATION_ERROR");
    expectError(
      await postTransfer(t, apiKey, file, { ...toHuman(newEmail()), sender: "nobody" }),
      400,
      "VALIDATION_ERROR",
    );
    const presigned = await postPresigned(t, apiKey, {
      ...toHuman(newEmail()),
      files: [{ name: "a.txt", size: 10, content_type: "text/plain" }],
    });
    expectError(presigned, 400, "VALIDATION_ERROR");
  });

  it("rebuilds the projections and finds a person's inbox identical", async () => {
    const { apiKey } = await newParties(t);
    const person = await newPerson(t);
    await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], toHuman(person.email));
    await setReceivingKey(t, person.session);
    await postTransfer(t, apiKey, [{ name: "b.txt", data: bytes(10) }], toHuman(person.email));
    const inbox = await received(t, person.session);
    expect(inbox).toHaveLength(2);
    // The log must stand still between the two dumps: earlier tests moved the clock, so the
    // housekeeper may still have transfers to purge. It does them now, then rests.
    await t.service.housekeeper.stop();
    for (let swept = await t.service.housekeeper.sweep(); swept.expired + swept.purged > 0; ) {
      swept = await t.service.housekeeper.sweep();
    }
    await t.service.engine.waitFor(await t.service.store.committedPosition(), 5000);
    const rows = await dumpReadModels(t.service.db);

    await t.service.engine.stop();
    for (const { name } of projections) await t.service.engine.rebuild(name, () => {});
    await t.service.engine.start();
    t.service.housekeeper.start();
    expect(await dumpReadModels(t.service.db)).toEqual(rows);
    expect(await received(t, person.session)).toEqual(inbox);
  });
});

describe("a transfer held in the legacy at-rest format (HOF1) by an earlier version", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  /** Writes what the earlier version left in a data directory: an HOF1 blob and its TransferCreated. */
  async function legacyHeldTransfer(senderAccountId: string, email: string, plain: Buffer) {
    const transferId = newTransferId();
    const fileId = newFileId();
    const dataKey = crypto.getRandomValues(new Uint8Array(32));
    await t.service.blobs.put(
      blobKey(transferId, fileId),
      Readable.from([plain]).pipe(new EncryptRecords(Buffer.from(dataKey))),
      {
        maxBytes: null,
        contentType: "application/octet-stream",
      },
    );
    const now = t.service.clock.now();
    const created = {
      type: "TransferCreated",
      data: {
        transferId,
        status: "pending_recipient",
        pendingReason: "recipient_not_registered",
        atRest: {
          wrappedDataKey: seal(t.service.deps.serverKey, LEGACY_DATA_KEY_PURPOSE, Buffer.from(dataKey)),
        },
        mode: "agent-to-human",
        sender: "alice",
        senderAccountId,
        senderAgentId: null,
        recipient: email,
        recipientAccountId: null,
        recipientAgentId: null,
        maxDownloads: 10,
        autoDelete: true,
        isEncrypted: false,
        message: null,
        metadata: {},
        expiresAt: new Date(now.getTime() + 3600_000).toISOString(),
        files: [
          {
            fileId,
            name: "old.bin",
            size: plain.length,
            type: "application/octet-stream",
            encryptionIv: null,
          },
        ],
        encryption: {
          encryptedKey: null,
          algorithm: null,
          senderSignature: null,
          recipientKeyVersion: null,
          senderPublicKey: null,
          recipientPublicKey: null,
        },
        createdAt: now.toISOString(),
      },
    };
    const position = await appendAll(t.service.store, [
      toAppend(
        { streamId: `transfer-${transferId}`, expected: NO_STREAM },
        [created],
        { kind: "api_key", accountId: senderAccountId, keyId: null },
        now.toISOString(),
      ),
    ]);
    await t.service.engine.waitFor(position, 5000);
    return transferId;
  }

  it("still activates: its files are rewritten once into 5.3's format, and the person opens them", async () => {
    const { accountId } = await newParties(t);
    const email = newEmail();
    const plain = bytes(150_000);
    const transferId = await legacyHeldTransfer(accountId, email, plain);

    const person = await newPerson(t, email);
    expect((await received(t, person.session)).map((tr) => tr.id)).toEqual([transferId]);
    const keys = await setReceivingKey(t, person.session);

    const body = await downloadOk(t, person.session, transferId);
    const [got] = await openDownload(t, body, keys);
    expect(got?.equals(plain)).toBe(true);
    const stored = readFileSync(join(blobDir(t, transferId), blobFiles(t, transferId)[0] as string));
    expect(stored.subarray(0, 4).toString()).toBe("HOE1");
    expect(await t.service.transferDeps.heldKeys.get(transferId)).toBeNull();
    const wrapped = (await t.service.store.readStream(`transfer-${transferId}`)).find(
      (e) => e.type === "ContentKeyWrapped",
    );
    const fileIvs = (wrapped?.data as { fileIvs: Record<string, string> } | undefined)?.fileIvs ?? {};
    expect(Object.values(fileIvs)).toEqual([body.files[0]?.encryption_iv]);
  });
});
