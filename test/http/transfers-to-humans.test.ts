import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATA_KEY_PURPOSE } from "../../src/commands/transfers/send.js";
import { DecryptRecords } from "../../src/security/record-cipher.js";
import { unseal } from "../../src/security/secrets.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, expectError } from "./helpers.js";
import {
  blobDir,
  blobFiles,
  bytes,
  newParties,
  postPresigned,
  postTransfer,
  type TransferBody,
  waitUntil,
} from "./transfer-helpers.js";

const TO_HUMAN = { sender: "alice", recipient: "carol@example.com", mode: "agent-to-human" };

function outbox(t: TestApp): string[] {
  const dir = join(t.service.config.dataDir, "outbox");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith(".eml"))
    .map((name) => readFileSync(join(dir, name), "utf8"));
}

/** Spec 4.9: agent-to-human to someone without an account (there are no human accounts yet). */
describe("agent-to-human transfers to a person without an account", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("holds the files for the recipient, encrypted at rest under a server-wrapped key, and invites them", async () => {
    const { apiKey } = await newParties(t);
    const secret = Buffer.concat([
      Buffer.from("plain text the server must not keep in clear "),
      bytes(200_000),
    ]);
    const res = await postTransfer(t, apiKey, [{ name: "report.pdf", data: secret }], {
      ...TO_HUMAN,
      message: "your report",
    });
    expect(res.statusCode, res.body).toBe(201);
    const transfer = res.json() as TransferBody;
    expect(transfer).toMatchObject({
      status: "pending_recipient",
      pending_reason: "recipient_not_registered",
      recipient: "carol@example.com",
      files: [{ name: "report.pdf", size: secret.length }],
      total_size: secret.length,
    });

    const [stored] = blobFiles(t, transfer.id);
    const onDisk = readFileSync(join(blobDir(t, transfer.id), stored as string));
    expect(onDisk.includes(secret.subarray(0, 40))).toBe(false);

    const [created] = await t.service.store.readStream(`transfer-${transfer.id}`);
    if (!created) throw new Error("the transfer has no events");
    const atRest = (created.data as { atRest: { wrappedDataKey: string } }).atRest;
    const dataKey = unseal(t.service.deps.serverKey, DATA_KEY_PURPOSE, atRest.wrappedDataKey);
    const opened = await buffer(Readable.from([onDisk]).pipe(new DecryptRecords(dataKey)));
    expect(opened.equals(secret)).toBe(true);

    await waitUntil(
      () => outbox(t).some((mail) => mail.includes("carol@example.com")),
      "the invitation is written",
    );
    const invite = outbox(t).find((mail) => mail.includes("To: carol@example.com")) as string;
    expect(invite).toMatch(/^X-Service-Email-Type: invite$/m);
    expect(invite).toContain("your report");
  });

  it("is visible to the sender only, not downloadable, and in no inbox", async () => {
    const { apiKey } = await newParties(t);
    const transfer = (await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], TO_HUMAN)).json();
    expect((await t.call("GET", `/v1/transfers/${transfer.id}`, { key: apiKey })).json().status).toBe(
      "pending_recipient",
    );
    expectError(
      await t.call("GET", `/v1/transfers/${transfer.id}/download`, { key: apiKey }),
      403,
      "FORBIDDEN",
    );
    const inbox = await t.call("GET", "/v1/transfers/inbox", { key: apiKey });
    expect(inbox.json().transfers).toEqual([]);
    const other = await t.newAccount();
    expectError(await t.call("GET", `/v1/transfers/${transfer.id}`, { key: other.apiKey }), 404, "NOT_FOUND");
  });

  it("allows 5 a UTC day per account, then 429 INVITE_RATE_LIMIT until the next day", async () => {
    const { apiKey } = await newParties(t, "builder");
    for (let i = 0; i < 5; i++) {
      const res = await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], TO_HUMAN);
      expect(res.statusCode, res.body).toBe(201);
    }
    const refused = await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], TO_HUMAN);
    expectError(refused, 429, "INVITE_RATE_LIMIT");
    const toAgent = await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }]);
    expect(toAgent.statusCode, "transfers to agents are not limited by invitations").toBe(201);
    await advanceClock(t, 24 * 3600);
    const nextDay = await postTransfer(t, apiKey, [{ name: "a.txt", data: bytes(10) }], TO_HUMAN);
    expect(nextDay.statusCode, nextDay.body).toBe(201);
  });

  it("refuses a recipient that is not an e-mail address, a sender that is not its agent, and the presigned flow", async () => {
    const { apiKey } = await newParties(t);
    const file = [{ name: "a.txt", data: bytes(10) }];
    expectError(
      await postTransfer(t, apiKey, file, { ...TO_HUMAN, recipient: "carol" }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await postTransfer(t, apiKey, file, { ...TO_HUMAN, sender: "nobody" }),
      400,
      "VALIDATION_ERROR",
    );
    const presigned = await postPresigned(t, apiKey, {
      ...TO_HUMAN,
      files: [{ name: "a.txt", size: 10, content_type: "text/plain" }],
    });
    expectError(presigned, 400, "VALIDATION_ERROR");
  });
});
