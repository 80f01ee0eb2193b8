import { generateX25519KeyPair, type KeyPair, toBase64 } from "@handoff/sdk";
import { expect } from "vitest";
import type { TestApp } from "../support/app.js";
import { outboxMessages } from "../support/outbox.js";
import { waitUntil } from "./transfer-helpers.js";

export const PASSWORD = "correct horse battery staple";

/** Every e-mail written to the outbox, as text with its body decoded. */
export function outbox(t: TestApp): string[] {
  return outboxMessages(t.service.config.dataDir).map((message) => message.text);
}

const isMail = (mail: string, to: string, type: string) =>
  mail.toLowerCase().includes(`to: ${to.toLowerCase()}`) &&
  new RegExp(`^X-Service-Email-Type: ${type}$`, "m").test(mail);

/** The e-mails of one type to one address so far. */
export const mailsTo = (t: TestApp, to: string, type: string) =>
  outbox(t).filter((mail) => isMail(mail, to, type));

/** Waits for the `count`-th e-mail of `type` to `to` and returns the newest. */
export async function mailTo(t: TestApp, to: string, type: string, count = 1): Promise<string> {
  await waitUntil(() => mailsTo(t, to, type).length >= count, `a ${type} e-mail to ${to} is written`);
  return mailsTo(t, to, type).at(-1) as string;
}

/** The token of the verification link in a verify e-mail. */
export function verifyToken(mail: string): string {
  const match = /\/verify\?token=(\S+)/.exec(mail);
  if (!match?.[1]) throw new Error(`no verification link in:\n${mail}`);
  return match[1];
}

let people = 0;
export const newEmail = () => `person${++people}-${Math.random().toString(36).slice(2, 8)}@example.org`;

export async function signUp(t: TestApp, email: string, password = PASSWORD) {
  const res = await t.call("POST", "/v1/auth/signup", { body: { email, password } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().account as { id: string; email: string };
}

export async function logIn(t: TestApp, email: string, password = PASSWORD) {
  const res = await t.call("POST", "/v1/auth/login", { body: { email, password } });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { token: string; expires_at: string; account: { id: string } };
}

/** A person signed up, verified (through the link in the outbox) and logged in. */
export async function newPerson(t: TestApp, email = newEmail()) {
  const account = await signUp(t, email);
  const verified = await t.call("POST", "/v1/auth/verify", {
    body: { token: verifyToken(await mailTo(t, email, "verify")) },
  });
  expect(verified.statusCode, verified.body).toBe(200);
  const { token } = await logIn(t, email);
  return { accountId: account.id, email, session: token };
}

export const kdf = {
  algorithm: "argon2id",
  salt: "c2FsdHNhbHRzYWx0c2FsdA==",
  memory_kib: 65536,
  iterations: 3,
  parallelism: 1,
};

/** Sets a fresh receiving key for a person; returns the key pair (the browser's, in real life). */
export async function setReceivingKey(t: TestApp, session: string): Promise<KeyPair> {
  const keys = generateX25519KeyPair();
  const res = await t.call("PUT", "/v1/auth/receiving-key", {
    key: session,
    body: { public_key: toBase64(keys.publicKey), kdf },
  });
  expect(res.statusCode, res.body).toBe(200);
  return keys;
}
