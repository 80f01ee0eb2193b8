import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { projections } from "../../projections/index.js";
import { ADMIN_TOKEN, startTestApp, type TestApp } from "../support/app.js";
import { postgresServer, postgresSkipReason, titled } from "../support/databases.js";
import { dumpReadModels } from "../support/read-models.js";
import { expectError, registerAgent } from "./helpers.js";
import { newPerson, PASSWORD, setReceivingKey } from "./people.js";
import {
  downloadOk,
  listTransfers,
  newParties,
  postTransfer,
  sendTransfer,
  waitUntil,
} from "./transfer-helpers.js";

/** Every file under `dir` whose bytes hold `needle` (any letter case), as paths relative to it. */
function filesHolding(dir: string, needle: string): string[] {
  const wanted = Buffer.from(needle.toLowerCase());
  const found: string[] = [];
  // PostgreSQL removes and recycles WAL segments and temporary files while the walk runs: one gone
  // before it was read holds nothing any more.
  const unlessGone = <T>(read: () => T): T | null => {
    try {
      return read();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  };
  const walk = (path: string) => {
    for (const name of unlessGone(() => readdirSync(path)) ?? []) {
      const full = join(path, name);
      if (unlessGone(() => statSync(full))?.isDirectory()) walk(full);
      else if (
        unlessGone(() => readFileSync(full))
          ?.toString("latin1")
          .toLowerCase()
          .includes(wanted.toString("latin1"))
      )
        found.push(full.slice(dir.length + 1));
    }
  };
  if (existsSync(dir)) walk(dir);
  return found;
}

/**
 * Where the database's bytes are on disk, after a checkpoint has written them there: PGlite's
 * directory, or (PostgreSQL on this machine, readable) the database's own directory and the WAL.
 * Null when the server's files cannot be read from here (a remote server).
 */
async function databaseFiles(t: TestApp): Promise<string[] | null> {
  const { db, config } = t.service;
  await db.raw("checkpoint");
  if (!config.databaseUrl) return [join(config.dataDir, "pg")];
  const dir = ((await db.raw("show data_directory")).rows[0] as { data_directory: string }).data_directory;
  const oid = (
    (await db.raw("select oid from pg_database where datname = current_database()")).rows[0] as {
      oid: number;
    }
  ).oid;
  const places = [join(dir, "base", String(oid)), join(dir, "pg_wal")];
  try {
    for (const place of places) readdirSync(place);
  } catch {
    console.warn(`[erasure] ${dir} is not readable from here: the file scan is skipped`);
    return null;
  }
  return places;
}

async function connect(t: TestApp, from: { apiKey: string }, to: { apiKey: string; email: string }) {
  const invite = await t.call("POST", "/v1/connections", { key: from.apiKey, body: { account: to.email } });
  expect(invite.statusCode, invite.body).toBe(201);
  const accepted = await t.call("POST", `/v1/connections/${invite.json().id}/accept`, { key: to.apiKey });
  expect(accepted.statusCode, accepted.body).toBe(200);
}

async function createAccount(t: TestApp, email: string, name: string) {
  const res = await t.call("POST", "/v1/admin/accounts", {
    key: ADMIN_TOKEN,
    body: { email, name, plan: "builder" },
  });
  expect(res.statusCode, res.body).toBe(201);
  const body = res.json();
  return { accountId: body.account.id as string, apiKey: body.api_key.api_key as string, email };
}

/**
 * Decisions 6.5: a person who sent and received transfers (through their account's agent, and as a
 * human recipient by e-mail) is erased; afterwards nothing anywhere shows their address or name.
 */
async function eraseSenderAndRecipient(t: TestApp): Promise<void> {
  const tag = randomBytes(4).toString("hex");
  const email = `Erin.Erasable-${tag}@example.com`;
  const personName = `Erin Erasable ${tag}`;
  const canary = `canary-message-${tag}`;
  const erin = await createAccount(t, email, personName);
  const quinn = await createAccount(t, `quinn-${tag}@example.com`, "Quinn");
  await registerAgent(t, erin.apiKey, { agent_id: "erin-bot" });
  await registerAgent(t, quinn.apiKey, { agent_id: "quinn-bot" });
  await connect(t, erin, quinn);

  // Erin sends to Quinn and receives from Quinn, through the agents of their accounts...
  const sent = await sendTransfer(t, erin.apiKey, undefined, {
    sender: "erin-bot",
    recipient: "quinn-bot",
    message: canary,
  });
  await downloadOk(t, quinn.apiKey, sent.id, "quinn-bot");
  const received = await sendTransfer(t, quinn.apiKey, undefined, {
    sender: "quinn-bot",
    recipient: "erin-bot",
  });
  await downloadOk(t, erin.apiKey, received.id, "erin-bot");
  // ...and as a person, by e-mail: held for her, with an invitation in the outbox.
  const toHuman = await postTransfer(t, quinn.apiKey, [{ name: "for-erin.txt", data: Buffer.from("hi") }], {
    sender: "quinn-bot",
    recipient: email,
    mode: "agent-to-human",
  });
  expect(toHuman.statusCode, toHuman.body).toBe(201);
  expect(toHuman.json().recipient).toBe(email);
  const dataDir = t.service.config.dataDir;
  await waitUntil(() => filesHolding(join(dataDir, "outbox"), email).length > 0, "the invitation is written");

  // Before: shown in clear to those entitled; the database files never held it in clear, though
  // they do hold the clear message (the scan can see what the database wrote).
  const connections = (await t.call("GET", "/v1/connections", { key: quinn.apiKey })).json().connections;
  expect(connections[0].peer_account.name).toBe(personName);
  const database = await databaseFiles(t);
  if (database) {
    expect(database.flatMap((dir) => filesHolding(dir, canary)).length).toBeGreaterThan(0);
    expect(database.flatMap((dir) => filesHolding(dir, email))).toEqual([]);
    expect(database.flatMap((dir) => filesHolding(dir, personName))).toEqual([]);
  }

  const erased = await t.call("POST", `/v1/admin/accounts/${erin.accountId}/erase`, { key: ADMIN_TOKEN });
  expect(erased.statusCode, erased.body).toBe(200);
  expect(erased.json()).toMatchObject({ account_id: erin.accountId, transfers: 1 });
  expect(Object.keys(erased.json()).sort()).toEqual(["account_id", "erased_at", "id", "transfers"]);

  // Her keys no longer work; her account is gone for the operator and for connections.
  expectError(await t.call("GET", "/v1/agents", { key: erin.apiKey }), 401, "UNAUTHORIZED");
  expectError(
    await t.call("PATCH", `/v1/admin/accounts/${erin.accountId}`, {
      key: ADMIN_TOKEN,
      body: { plan: "team" },
    }),
    404,
    "NOT_FOUND",
  );
  expectError(
    await t.call("POST", "/v1/connections", { key: quinn.apiKey, body: { account: email } }),
    404,
    "NOT_FOUND",
  );

  // Every answer Quinn gets shows "[erased]" where she was.
  const peer = (await t.call("GET", "/v1/connections", { key: quinn.apiKey })).json().connections[0]
    .peer_account;
  expect(peer).toEqual({ id: erin.accountId, name: "[erased]", email_masked: "[erased]" });
  const listed = await listTransfers(t, quinn.apiKey);
  expect(listed.transfers.find((x) => x.id === toHuman.json().id)?.recipient).toBe("[erased]");
  const history = (
    await t.call("GET", `/v1/transfers/${toHuman.json().id}/history`, { key: quinn.apiKey })
  ).json();
  expect(history.entries.map((e: { type: string }) => e.type)).toEqual(["TransferCreated", "PersonErased"]);
  expect(history.entries[0].data.recipient).toBe("[erased]");
  const auditBody = (await t.call("GET", "/v1/audit?type=PersonErased", { key: quinn.apiKey })).body;
  expect(JSON.parse(auditBody).entries).toHaveLength(1);
  const month = sent.created_at.slice(0, 7);
  const report = (await t.call("GET", `/v1/reports/compliance?month=${month}`, { key: quinn.apiKey })).json();
  expect(report.erasures).toBe(1);

  // Rebuilt read models: the same rows, "[erased]" written out, the address and name nowhere.
  await t.service.housekeeper.stop();
  await t.service.engine.waitFor(await t.service.store.headPosition(), 5000);
  const before = await dumpReadModels(t.service.db);
  await t.service.engine.stop();
  for (const { name } of projections) await t.service.engine.rebuild(name, () => {});
  const after = await dumpReadModels(t.service.db);
  expect(after).toEqual(before);
  const account = after.accounts?.find((row) => (row as { id: string }).id === erin.accountId);
  expect(account).toMatchObject({ email: "[erased]", name: "[erased]" });
  const dump = JSON.stringify(after).toLowerCase();
  expect(dump).not.toContain(email.toLowerCase());
  expect(dump).not.toContain(personName.toLowerCase());
  await t.service.engine.start();
  t.service.housekeeper.start();

  // The files: the database's (after a checkpoint), file data and the outbox hold nothing of hers.
  const places = [dataDir, ...((await databaseFiles(t)) ?? [])];
  expect(places.flatMap((dir) => filesHolding(dir, email))).toEqual([]);
  expect(places.flatMap((dir) => filesHolding(dir, personName))).toEqual([]);
  expect(places.flatMap((dir) => filesHolding(dir, canary)).length).toBeGreaterThan(0);
  expect(readdirSync(join(dataDir, "outbox")).join("\n")).not.toContain(email.toLowerCase());

  // Erasing again answers the first erasure, records nothing more.
  const again = await t.call("POST", `/v1/admin/accounts/${erin.accountId}/erase`, { key: ADMIN_TOKEN });
  expect(again.json().id).toBe(erased.json().id);

  // The address is free again: a new account may take it, and it is a new person.
  const reborn = await createAccount(t, email, "Someone Else");
  expect(reborn.accountId).not.toBe(erin.accountId);
}

describe("erasure by crypto-shredding", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it("leaves nothing readable of the person in answers, history, reports, rebuilt read models or files", async () => {
    await eraseSenderAndRecipient(t);
  });

  it("erases a person without an account by e-mail address, and refuses a malformed one", async () => {
    const tag = randomBytes(4).toString("hex");
    const email = `dana-${tag}@example.com`;
    const sender = await createAccount(t, `sender-${tag}@example.com`, "Sender");
    await registerAgent(t, sender.apiKey, { agent_id: "bot" });
    const held = await postTransfer(t, sender.apiKey, [{ name: "x.txt", data: Buffer.from("x") }], {
      sender: "bot",
      recipient: email,
      mode: "agent-to-human",
    });
    expect(held.statusCode, held.body).toBe(201);
    await waitUntil(
      () => filesHolding(join(t.service.config.dataDir, "outbox"), email).length > 0,
      "the invitation is written",
    );

    const res = await t.call("POST", "/v1/admin/erasures", {
      key: ADMIN_TOKEN,
      body: { email: email.toUpperCase() },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ account_id: null, transfers: 1 });
    const shown = (await t.call("GET", `/v1/transfers/${held.json().id}`, { key: sender.apiKey })).json();
    expect(shown.recipient).toBe("[erased]");
    expect(filesHolding(join(t.service.config.dataDir, "outbox"), email)).toEqual([]);

    expectError(
      await t.call("POST", "/v1/admin/erasures", { key: ADMIN_TOKEN, body: { email: "not-an-address" } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await t.call("POST", "/v1/admin/erasures", { key: ADMIN_TOKEN, body: {} }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await t.call("POST", "/v1/admin/erasures", { body: { email } }), 401, "UNAUTHORIZED");
    expectError(
      await t.call("POST", `/v1/admin/accounts/${sender.accountId}/erase`, { key: sender.apiKey }),
      401,
      "UNAUTHORIZED",
    );
    expectError(
      await t.call("POST", "/v1/admin/accounts/00000000-0000-4000-8000-000000000000/erase", {
        key: ADMIN_TOKEN,
      }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await t.call("POST", "/v1/admin/accounts/nope/erase", { key: ADMIN_TOKEN }),
      404,
      "NOT_FOUND",
    );
  });

  it("erases a person who signed up, received and sent as a human: login refused, sessions ended, nothing left", async () => {
    const tag = randomBytes(4).toString("hex");
    const email = `hana-${tag}@example.org`;
    const person = await newPerson(t, email);
    await setReceivingKey(t, person.session);
    const agents = await newParties(t);
    const toHer = await postTransfer(t, agents.apiKey, [{ name: "to-hana.txt", data: Buffer.from("hi") }], {
      sender: "alice",
      recipient: email,
      mode: "agent-to-human",
    });
    expect(toHer.statusCode, toHer.body).toBe(201);
    const fromHer = await postTransfer(
      t,
      person.session,
      [{ name: "from-hana.bin", data: Buffer.alloc(10) }],
      {
        sender: email,
        recipient: "bob",
        mode: "human-to-agent",
        is_encrypted: "true",
        encrypted_key: "AAAA",
      },
    );
    expect(fromHer.statusCode, fromHer.body).toBe(201);
    expect(fromHer.json().sender).toBe(email);
    const history = await t.call("GET", `/v1/transfers/${fromHer.json().id}/history`, { key: agents.apiKey });
    expect(history.json().entries[0].data.sender).toBe(email);

    const res = await t.call("POST", "/v1/admin/erasures", { key: ADMIN_TOKEN, body: { email } });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ account_id: person.accountId, transfers: 2 });

    // She can no longer log in (the same 401 as an unknown address), and her session is over.
    expectError(
      await t.call("POST", "/v1/auth/login", { body: { email, password: PASSWORD } }),
      401,
      "UNAUTHORIZED",
    );
    expectError(await t.call("GET", "/v1/transfers", { key: person.session }), 401, "UNAUTHORIZED");
    // The agents' side sees "[erased]" where she was, as sender and as recipient.
    const list = await listTransfers(t, agents.apiKey);
    expect(list.transfers.find((x) => x.id === fromHer.json().id)?.sender).toBe("[erased]");
    expect(list.transfers.find((x) => x.id === toHer.json().id)?.recipient).toBe("[erased]");
    const after = await t.call("GET", `/v1/transfers/${fromHer.json().id}/history`, { key: agents.apiKey });
    expect(after.json().entries[0].data.sender).toBe("[erased]");
    await t.service.engine.waitFor(await t.service.store.headPosition(), 5000);
    const models = JSON.stringify(await dumpReadModels(t.service.db)).toLowerCase();
    expect(models).not.toContain(email.toLowerCase());
    const verification = await t.service.db("history_entries").where({ type: "EmailVerificationRequested" });
    expect(verification.some((row) => row.data.email === "[erased]")).toBe(true);
    const places = [t.service.config.dataDir, ...((await databaseFiles(t)) ?? [])];
    expect(places.flatMap((dir) => filesHolding(dir, email))).toEqual([]);
    // A sign-up with the address is a new person.
    expect(
      (await t.call("POST", "/v1/auth/signup", { body: { email, password: PASSWORD } })).statusCode,
    ).toBe(201);
  });
});

describe.skipIf(!postgresServer)(
  titled("erasure by crypto-shredding on PostgreSQL", postgresSkipReason),
  () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ database: "postgres" });
    });
    afterAll(async () => t?.close());

    it("leaves nothing readable in answers, read models, and the server's files for the database and its WAL", async () => {
      await eraseSenderAndRecipient(t);
    });
  },
);
