import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logIn as logInCommand, resetPassword } from "../../src/command-handlers/humans.js";
import type { StreamAppend } from "../../src/eventstore/port.js";
import { ACCOUNT_MAIL_REQUESTS, LOGIN_FAILURES } from "../../src/rate-limits/policy.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, expectError, startOfWindow } from "./helpers.js";
import { logIn, mailsTo, mailTo, newEmail, newPerson, PASSWORD, signUp, verifyToken } from "./people.js";
import { waitUntil } from "./transfer-helpers.js";

const NEW_PASSWORD = "a brand new passphrase";
const ACCEPTED = {
  status: "accepted",
  message: "if this address has an account that needs it, an e-mail is on its way",
};

/** The token of the link in a password-reset e-mail. */
function resetToken(mail: string): string {
  const match = /\/reset-password\?token=(\S+)/.exec(mail);
  if (!match?.[1]) throw new Error(`no reset link in:\n${mail}`);
  return match[1];
}

/** Lets the mail reactor catch up, so "no e-mail" means none was asked for. */
const settleMail = () => new Promise((resolve) => setTimeout(resolve, 300));

/** People running their own account: forgot password, reset, resend verification, change password. */
describe("people: account recovery and password change", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  const forgot = (email: string) => t.call("POST", "/v1/auth/forgot-password", { body: { email } });
  const resend = (email: string) => t.call("POST", "/v1/auth/resend-verification", { body: { email } });
  const reset = (token: string, password = NEW_PASSWORD) =>
    t.call("POST", "/v1/auth/reset-password", { body: { token, password } });
  const loginStatus = async (email: string, password: string) =>
    (await t.call("POST", "/v1/auth/login", { body: { email, password } })).statusCode;

  describe("POST /v1/auth/forgot-password and /v1/auth/reset-password", () => {
    it("mails a single-use reset link; the reset ends every session and the old password", async () => {
      const person = await newPerson(t);
      const second = await logIn(t, person.email);
      const res = await forgot(person.email.toUpperCase());
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toEqual(ACCEPTED);
      const mail = await mailTo(t, person.email, "password-reset");
      expect(mail).toMatch(/^X-Service-Email-Type: password-reset$/m);
      const token = resetToken(mail);
      expect(token).toMatch(/^hrt_/);
      expect(mail).toContain(`${t.service.config.publicBaseUrl}/reset-password?token=${token}`);

      const done = await reset(token);
      expect(done.statusCode, done.body).toBe(200);
      expect(done.json()).toEqual({ status: "password_reset" });
      for (const session of [person.session, second.token]) {
        expectError(await t.call("GET", "/v1/transfers", { key: session }), 401, "UNAUTHORIZED");
      }
      expect(await loginStatus(person.email, PASSWORD)).toBe(401);
      expect(await loginStatus(person.email, NEW_PASSWORD)).toBe(200);
      expectError(await reset(token, "yet another password"), 400, "INVALID_TOKEN");

      // Neither the link nor the password is in the log: only the reset's id and a sealed hash.
      const log = JSON.stringify(await t.service.store.readStream(`human-${person.accountId}`));
      expect(log).toContain("PasswordResetRequested");
      expect(log).toContain("PasswordReset");
      expect(log).not.toContain(token.slice(-43));
      expect(log).not.toContain(NEW_PASSWORD);
    });

    it("ends a login whose password check a reset overtook: no session outlives the reset", async () => {
      const person = await newPerson(t);
      await forgot(person.email);
      const token = resetToken(await mailTo(t, person.email, "password-reset"));
      const deps = t.service.humanDeps;
      // The reset is recorded after this login checked the old password, before its session is.
      let overtaken = false;
      const racing = new Proxy(deps.store, {
        get(store, name) {
          if (name === "appendMany") {
            return async (appends: StreamAppend[]) => {
              if (!overtaken && appends.some((append) => append.streamId.startsWith("session-"))) {
                overtaken = true;
                await resetPassword(deps, { token, password: NEW_PASSWORD }, null);
              }
              return store.appendMany(appends);
            };
          }
          const value = Reflect.get(store, name, store);
          return typeof value === "function" ? value.bind(store) : value;
        },
      });
      await expect(
        logInCommand({ ...deps, store: racing }, { email: person.email, password: PASSWORD }, null),
      ).rejects.toMatchObject({ code: "UNAUTHORIZED" });
      expect(overtaken).toBe(true);
      const openSessions = () =>
        t.service.db("sessions").where({ account_id: person.accountId }).whereNull("ended_at");
      await waitUntil(
        async () => (await openSessions()).length === 0,
        "no session of the account is open",
        30_000,
      );
      expect(await loginStatus(person.email, NEW_PASSWORD)).toBe(200);
    });

    it("answers an unknown address, an agent account's address and a person's alike, and mails only the person", async () => {
      const unknown = newEmail();
      const agentAccount = await t.newAccount();
      const person = await newPerson(t);
      const answers = await Promise.all([forgot(unknown), forgot(agentAccount.email), forgot(person.email)]);
      for (const answer of answers) {
        expect(answer.statusCode, answer.body).toBe(202);
        expect(answer.json()).toEqual(ACCEPTED);
      }
      await mailTo(t, person.email, "password-reset");
      await settleMail();
      expect(mailsTo(t, unknown, "password-reset")).toEqual([]);
      expect(mailsTo(t, agentAccount.email, "password-reset")).toEqual([]);
      expectError(await forgot("not an address"), 400, "VALIDATION_ERROR");
    });

    it("refuses a superseded, an expired, a forged or a malformed link, and a password of the wrong length", async () => {
      const person = await newPerson(t);
      await forgot(person.email);
      const first = resetToken(await mailTo(t, person.email, "password-reset"));
      await forgot(person.email);
      const second = resetToken(await mailTo(t, person.email, "password-reset", 2));
      expectError(await reset(first), 400, "INVALID_TOKEN");
      expectError(await reset(`${second.slice(0, -2)}AA`), 400, "INVALID_TOKEN");
      expectError(await reset("garbage"), 400, "INVALID_TOKEN");
      // A verification link is not a reset link, though both are signed by the server.
      const other = newEmail();
      await signUp(t, other);
      expectError(await reset(verifyToken(await mailTo(t, other, "verify"))), 400, "INVALID_TOKEN");
      expectError(await reset(second, "short"), 400, "VALIDATION_ERROR");
      expectError(await reset(second, "x".repeat(201)), 400, "VALIDATION_ERROR");

      await advanceClock(t, 3600);
      expectError(await reset(second), 400, "INVALID_TOKEN");
      expect(await loginStatus(person.email, PASSWORD)).toBe(200);
    });

    it("counts requests per address, known or not: the sixth in 15 minutes is 429 with Retry-After", async () => {
      for (const email of [newEmail(), (await newPerson(t)).email]) {
        await startOfWindow(t, ACCOUNT_MAIL_REQUESTS.windowMs);
        for (let i = 0; i < 5; i++) expect((await forgot(email)).statusCode).toBe(202);
        const refused = await resend(email);
        expectError(refused, 429, "RATE_LIMITED");
        const retryAfter = Number(refused.headers["retry-after"]);
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(15 * 60);
        expect((await forgot(newEmail())).statusCode).toBe(202);
        await advanceClock(t, retryAfter);
        expect((await forgot(email)).statusCode).toBe(202);
      }
    });
  });

  describe("POST /v1/auth/resend-verification", () => {
    it("mails a new link to an unconfirmed address; the earlier link stops working", async () => {
      const email = newEmail();
      await signUp(t, email);
      const first = verifyToken(await mailTo(t, email, "verify"));
      const res = await resend(email);
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toEqual(ACCEPTED);
      const second = verifyToken(await mailTo(t, email, "verify", 2));
      expect(second).not.toBe(first);
      expectError(await t.call("POST", "/v1/auth/verify", { body: { token: first } }), 400, "INVALID_TOKEN");
      const verified = await t.call("POST", "/v1/auth/verify", { body: { token: second } });
      expect(verified.statusCode, verified.body).toBe(200);
      expect(await loginStatus(email, PASSWORD)).toBe(200);
    });

    it("answers a confirmed address and an unknown one alike, without mailing either", async () => {
      const person = await newPerson(t);
      const unknown = newEmail();
      for (const email of [person.email, unknown]) {
        const res = await resend(email);
        expect(res.statusCode, res.body).toBe(202);
        expect(res.json()).toEqual(ACCEPTED);
      }
      await settleMail();
      expect(mailsTo(t, person.email, "verify")).toHaveLength(1);
      expect(mailsTo(t, unknown, "verify")).toEqual([]);
    });
  });

  describe("PUT /v1/auth/password", () => {
    const change = (session: string, current_password: string, new_password = NEW_PASSWORD) =>
      t.call("PUT", "/v1/auth/password", { key: session, body: { current_password, new_password } });

    it("changes the login password with the current one; the caller's session stays, the others end", async () => {
      const person = await newPerson(t);
      const other = await logIn(t, person.email);
      const res = await change(person.session, PASSWORD);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ status: "password_changed" });
      expect((await t.call("GET", "/v1/transfers", { key: person.session })).statusCode).toBe(200);
      expectError(await t.call("GET", "/v1/transfers", { key: other.token }), 401, "UNAUTHORIZED");
      expect(await loginStatus(person.email, PASSWORD)).toBe(401);
      expect(await loginStatus(person.email, NEW_PASSWORD)).toBe(200);
    });

    it("refuses a wrong current password (403, the session kept), a bad new one, and an API key", async () => {
      const person = await newPerson(t);
      expectError(await change(person.session, "not my password"), 403, "FORBIDDEN");
      expect((await t.call("GET", "/v1/transfers", { key: person.session })).statusCode).toBe(200);
      expectError(await change(person.session, PASSWORD, "short"), 400, "VALIDATION_ERROR");
      const key = await t.call("POST", "/v1/api-keys", { key: person.session, body: { name: "script" } });
      expectError(await change(key.json().api_key, PASSWORD), 401, "UNAUTHORIZED");
      expect(await loginStatus(person.email, PASSWORD)).toBe(200);
    });

    it("counts wrong current passwords as failed logins of the address: the eleventh guess is 429", async () => {
      const person = await newPerson(t);
      await startOfWindow(t, LOGIN_FAILURES.windowMs);
      for (let i = 0; i < 10; i++)
        expectError(await change(person.session, `guess number ${i}`), 403, "FORBIDDEN");
      expectError(await change(person.session, PASSWORD), 429, "RATE_LIMITED");
      expectError(
        await t.call("POST", "/v1/auth/login", { body: { email: person.email, password: PASSWORD } }),
        429,
        "RATE_LIMITED",
      );
    });
  });
});
