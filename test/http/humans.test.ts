import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOGIN_FAILURES } from "../../src/rate-limits/policy.js";
import { startTestApp, type TestApp } from "../support/app.js";
import { advanceClock, allKeys, expectError, startOfWindow } from "./helpers.js";
import {
  kdf,
  logIn,
  mailTo,
  newEmail,
  newPerson,
  PASSWORD,
  setReceivingKey,
  signUp,
  verifyToken,
} from "./people.js";

const ACCOUNT_KEYS = ["created_at", "email", "email_verified", "id", "kind", "name", "plan"];

/** Decisions 4.1–4.4: people's accounts, sessions and receiving keys. */
describe("people: sign-up, verification, sessions, receiving keys", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  describe("POST /v1/auth/signup", () => {
    it("creates an unverified human account and mails a verification link", async () => {
      const email = newEmail();
      const res = await t.call("POST", "/v1/auth/signup", {
        body: { email, password: PASSWORD, name: "Ada L." },
      });
      expect(res.statusCode, res.body).toBe(201);
      const { account } = res.json();
      expect(Object.keys(account).sort()).toEqual(ACCOUNT_KEYS);
      expect(account).toMatchObject({
        email,
        name: "Ada L.",
        plan: "free",
        kind: "human",
        email_verified: false,
      });
      const mail = await mailTo(t, email, "verify");
      expect(mail).toContain(`${t.service.config.publicBaseUrl}/verify?token=`);
    });

    it("refuses a password under 10 or over 200 characters, a bad address, and a used address", async () => {
      expectError(
        await t.call("POST", "/v1/auth/signup", { body: { email: newEmail(), password: "short" } }),
        400,
        "VALIDATION_ERROR",
      );
      expectError(
        await t.call("POST", "/v1/auth/signup", { body: { email: newEmail(), password: "x".repeat(201) } }),
        400,
        "VALIDATION_ERROR",
      );
      expectError(
        await t.call("POST", "/v1/auth/signup", { body: { email: "nope", password: PASSWORD } }),
        400,
        "VALIDATION_ERROR",
      );
      const email = newEmail();
      await signUp(t, email);
      expectError(
        await t.call("POST", "/v1/auth/signup", { body: { email: email.toUpperCase(), password: PASSWORD } }),
        409,
        "ACCOUNT_EXISTS",
      );
      const agentAccount = await t.newAccount();
      expectError(
        await t.call("POST", "/v1/auth/signup", { body: { email: agentAccount.email, password: PASSWORD } }),
        409,
        "ACCOUNT_EXISTS",
      );
    });

    it("keeps the password, its hash and the tokens out of every event", async () => {
      const email = newEmail();
      await signUp(t, email);
      const token = verifyToken(await mailTo(t, email, "verify"));
      await t.call("POST", "/v1/auth/verify", { body: { token } });
      const { token: session } = await logIn(t, email);
      const events = await t.service.store.readAll(null, 100_000);
      const log = JSON.stringify(events);
      expect(log).not.toContain(PASSWORD);
      expect(log).not.toContain(token);
      expect(log).not.toContain(session);
      expect(log).not.toContain("scrypt$");
      expect([...new Set(allKeys(events).filter((key) => /password/i.test(key)))]).toEqual([
        "sealedPasswordHash",
      ]);
    });
  });

  describe("POST /v1/auth/verify", () => {
    it("verifies once; the same link again, a forged one and an expired one are 400 INVALID_TOKEN", async () => {
      const email = newEmail();
      await signUp(t, email);
      const token = verifyToken(await mailTo(t, email, "verify"));
      const res = await t.call("POST", "/v1/auth/verify", { body: { token } });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json().account).toMatchObject({ email, kind: "human", email_verified: true });
      expectError(await t.call("POST", "/v1/auth/verify", { body: { token } }), 400, "INVALID_TOKEN");
      expectError(
        await t.call("POST", "/v1/auth/verify", { body: { token: `${token.slice(0, -2)}AA` } }),
        400,
        "INVALID_TOKEN",
      );
      expectError(
        await t.call("POST", "/v1/auth/verify", { body: { token: "garbage" } }),
        400,
        "INVALID_TOKEN",
      );

      const late = newEmail();
      await signUp(t, late);
      const lateToken = verifyToken(await mailTo(t, late, "verify"));
      await advanceClock(t, 24 * 3600 + 1);
      expectError(
        await t.call("POST", "/v1/auth/verify", { body: { token: lateToken } }),
        400,
        "INVALID_TOKEN",
      );
      expectError(await t.call("POST", "/v1/auth/verify", { body: {} }), 400, "VALIDATION_ERROR");
    });
  });

  describe("POST /v1/auth/login and logout", () => {
    it("starts a 12-hour session accepted where an API key is; logout ends it at once", async () => {
      const person = await newPerson(t);
      const res = await t.call("POST", "/v1/auth/login", {
        body: { email: person.email, password: PASSWORD },
      });
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(["account", "expires_at", "token"]);
      expect(body.token).toMatch(/^hss_/);
      expect(Date.parse(body.expires_at) - t.service.clock.now().getTime()).toBeCloseTo(12 * 3600 * 1000, -4);
      expect(body.account).toMatchObject({ id: person.accountId, email_verified: true });

      // Wherever an API key is: transfers, API keys, connections, the rate-limit headers.
      const list = await t.call("GET", "/v1/transfers", { key: body.token });
      expect(list.statusCode, list.body).toBe(200);
      expect(list.headers["x-ratelimit-limit"]).toBe("120");
      const key = await t.call("POST", "/v1/api-keys", { key: body.token, body: { name: "laptop" } });
      expect(key.statusCode, key.body).toBe(201);
      expect((await t.call("GET", "/v1/connections", { key: key.json().api_key })).statusCode).toBe(200);
      expect((await t.call("GET", "/v1/auth/session", { key: body.token })).json().account.id).toBe(
        person.accountId,
      );

      const out = await t.call("POST", "/v1/auth/logout", { key: body.token });
      expect(out.statusCode, out.body).toBe(200);
      expect(out.json()).toEqual({ status: "logged_out" });
      expectError(await t.call("GET", "/v1/transfers", { key: body.token }), 401, "UNAUTHORIZED");
      expectError(await t.call("POST", "/v1/auth/logout", { key: body.token }), 401, "UNAUTHORIZED");
      // The other session of the same person still works.
      expect((await t.call("GET", "/v1/transfers", { key: person.session })).statusCode).toBe(200);
    });

    it("expires a session after 12 hours", async () => {
      const person = await newPerson(t);
      await advanceClock(t, 12 * 3600);
      expectError(await t.call("GET", "/v1/transfers", { key: person.session }), 401, "UNAUTHORIZED");
    });

    it("answers a wrong password and an unknown address alike (401), an unverified one 403 EMAIL_NOT_VERIFIED", async () => {
      const person = await newPerson(t);
      const wrong = expectError(
        await t.call("POST", "/v1/auth/login", {
          body: { email: person.email, password: "wrong password!" },
        }),
        401,
        "UNAUTHORIZED",
      );
      const unknown = expectError(
        await t.call("POST", "/v1/auth/login", { body: { email: newEmail(), password: PASSWORD } }),
        401,
        "UNAUTHORIZED",
      );
      expect(unknown.message).toBe(wrong.message);
      const unverified = newEmail();
      await signUp(t, unverified);
      expectError(
        await t.call("POST", "/v1/auth/login", { body: { email: unverified, password: PASSWORD } }),
        403,
        "EMAIL_NOT_VERIFIED",
      );
      expectError(
        await t.call("POST", "/v1/auth/login", { body: { email: unverified, password: "wrong password!" } }),
        401,
        "UNAUTHORIZED",
      );
      expectError(
        await t.call("POST", "/v1/auth/login", { body: { email: person.email } }),
        400,
        "VALIDATION_ERROR",
      );
    });

    it("refuses an address after 10 failed logins in 15 minutes with 429 and Retry-After, even with the right password", async () => {
      const person = await newPerson(t);
      await startOfWindow(t, LOGIN_FAILURES.windowMs);
      const fail = () =>
        t.call("POST", "/v1/auth/login", { body: { email: person.email, password: "wrong password!" } });
      for (let i = 0; i < 10; i++) expectError(await fail(), 401, "UNAUTHORIZED");
      const refused = await t.call("POST", "/v1/auth/login", {
        body: { email: person.email, password: PASSWORD },
      });
      expectError(refused, 429, "RATE_LIMITED");
      const retryAfter = Number(refused.headers["retry-after"]);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(15 * 60);
      // Another address is not affected.
      const other = await newPerson(t);
      expect(
        (await t.call("POST", "/v1/auth/login", { body: { email: other.email, password: PASSWORD } }))
          .statusCode,
      ).toBe(200);
      await advanceClock(t, retryAfter);
      expect(
        (await t.call("POST", "/v1/auth/login", { body: { email: person.email, password: PASSWORD } }))
          .statusCode,
      ).toBe(200);
    });

    it("ignores Idempotency-Key on login, so no record keeps a token", async () => {
      const person = await newPerson(t);
      const headers = { "idempotency-key": "login-1" };
      const first = await t.call("POST", "/v1/auth/login", {
        body: { email: person.email, password: PASSWORD },
        headers,
      });
      const second = await t.call("POST", "/v1/auth/login", {
        body: { email: person.email, password: PASSWORD },
        headers,
      });
      expect(first.json().token).not.toBe(second.json().token);
      const records = await t.service.db("idempotency_records").where({ key: "login-1" });
      expect(records).toEqual([]);
    });
  });

  describe("receiving key", () => {
    it("PUT sets it (key_version 1), again rotates it (2); GET answers it, 404 before", async () => {
      const person = await newPerson(t);
      expectError(await t.call("GET", "/v1/auth/receiving-key", { key: person.session }), 404, "NOT_FOUND");
      await setReceivingKey(t, person.session);
      const first = await t.call("GET", "/v1/auth/receiving-key", { key: person.session });
      expect(first.statusCode, first.body).toBe(200);
      expect(first.json()).toMatchObject({ kdf, key_version: 1 });
      expect(Object.keys(first.json()).sort()).toEqual(["kdf", "key_version", "public_key"]);
      await setReceivingKey(t, person.session);
      const second = (await t.call("GET", "/v1/auth/receiving-key", { key: person.session })).json();
      expect(second.key_version).toBe(2);
      expect(second.public_key).not.toBe(first.json().public_key);
    });

    it("takes a session only, a 32-byte key and an argon2id kdf", async () => {
      const person = await newPerson(t);
      const key = (await t.call("POST", "/v1/api-keys", { key: person.session, body: { name: "k" } })).json()
        .api_key;
      const body = { public_key: Buffer.alloc(32, 9).toString("base64"), kdf };
      expectError(await t.call("PUT", "/v1/auth/receiving-key", { key, body }), 401, "UNAUTHORIZED");
      expectError(await t.call("PUT", "/v1/auth/receiving-key", { body }), 401, "UNAUTHORIZED");
      expectError(
        await t.call("PUT", "/v1/auth/receiving-key", {
          key: person.session,
          body: { ...body, public_key: "AAAA" },
        }),
        400,
        "INVALID_PUBLIC_KEY",
      );
      expectError(
        await t.call("PUT", "/v1/auth/receiving-key", {
          key: person.session,
          body: { ...body, kdf: { ...kdf, algorithm: "pbkdf2" } },
        }),
        400,
        "VALIDATION_ERROR",
      );
      const agentAccount = await t.newAccount();
      expectError(
        await t.call("GET", "/v1/auth/receiving-key", { key: agentAccount.apiKey }),
        404,
        "NOT_FOUND",
      );
    });
  });

  it("accepts a session on PUT /v1/broadcasts/{id}/read (404 NO_AGENTS for a person without agents)", async () => {
    const person = await newPerson(t);
    const res = await t.call("PUT", "/v1/broadcasts/00000000-0000-4000-8000-000000000000/read", {
      key: person.session,
    });
    expectError(res, 404, "NO_AGENTS");
  });
});
