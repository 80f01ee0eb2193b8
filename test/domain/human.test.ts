import { describe, expect, it } from "vitest";
import { decideLogin, type HumanEvent, humanDecider } from "../../domain/human.js";
import { type SessionEvent, sessionDecider } from "../../domain/session.js";
import { given } from "./given.js";

const NOW = "2026-01-01T00:00:00.000Z";
const signedUp: HumanEvent = {
  type: "HumanSignedUp",
  data: { accountId: "a-1", sealedPasswordHash: "sealed", at: NOW },
};
const requested: HumanEvent = {
  type: "EmailVerificationRequested",
  data: { verificationId: "v-1", email: "ada@example.org", expiresAt: "2026-01-02T00:00:00.000Z" },
};
const verified: HumanEvent = { type: "EmailVerified", data: { verificationId: "v-1", at: NOW } };
const kdf = {
  algorithm: "argon2id" as const,
  salt: "c2FsdA==",
  memoryKib: 65536,
  iterations: 3,
  parallelism: 1,
};

describe("human decider", () => {
  it("signs up once, with a verification that lives 24 hours", () => {
    const command = {
      type: "SignUp" as const,
      accountId: "a-1",
      email: "ada@example.org",
      sealedPasswordHash: "sealed",
      verificationId: "v-1",
      now: NOW,
    };
    given(humanDecider, []).when(command).then([signedUp, requested]);
    given(humanDecider, [signedUp, requested]).when(command).thenRefused("ACCOUNT_EXISTS");
  });

  it("verifies the open verification once, before it expires", () => {
    given(humanDecider, [signedUp, requested])
      .when({ type: "VerifyEmail", verificationId: "v-1", now: NOW })
      .then([verified]);
    given(humanDecider, [signedUp, requested, verified])
      .when({ type: "VerifyEmail", verificationId: "v-1", now: NOW })
      .thenRefused("INVALID_TOKEN");
    given(humanDecider, [signedUp, requested])
      .when({ type: "VerifyEmail", verificationId: "v-1", now: "2026-01-02T00:00:00.000Z" })
      .thenRefused("INVALID_TOKEN");
    given(humanDecider, [signedUp, requested])
      .when({ type: "VerifyEmail", verificationId: "v-2", now: NOW })
      .thenRefused("INVALID_TOKEN");
  });

  it("sets a receiving key only once verified; setting it again is version + 1", () => {
    const set = { type: "SetReceivingKey" as const, publicKey: "pk", kdf, now: NOW };
    given(humanDecider, [signedUp, requested]).when(set).thenRefused("EMAIL_NOT_VERIFIED");
    const first: HumanEvent = {
      type: "ReceivingKeySet",
      data: { publicKey: "pk", kdf, keyVersion: 1, at: NOW },
    };
    given(humanDecider, [signedUp, requested, verified]).when(set).then([first]);
    given(humanDecider, [signedUp, requested, verified, first])
      .when(set)
      .then([{ type: "ReceivingKeySet", data: { publicKey: "pk", kdf, keyVersion: 2, at: NOW } }]);
  });

  it("lets a login in only with the right password and a verified address; a wrong password says nothing more", () => {
    const fold = (events: HumanEvent[]) => events.reduce(humanDecider.evolve, humanDecider.initialState());
    expect(decideLogin(fold([signedUp, requested, verified]), true)).toBe("ok");
    expect(decideLogin(fold([signedUp, requested, verified]), false)).toMatchObject({ code: "UNAUTHORIZED" });
    expect(decideLogin(fold([signedUp, requested]), false)).toMatchObject({ code: "UNAUTHORIZED" });
    expect(decideLogin(fold([signedUp, requested]), true)).toMatchObject({ code: "EMAIL_NOT_VERIFIED" });
    expect(decideLogin(fold([]), true)).toMatchObject({ code: "UNAUTHORIZED" });
  });
});

describe("human decider: the login password and links asked for again", () => {
  const LATER = "2026-01-01T00:30:00.000Z";
  const resetAsked: HumanEvent = {
    type: "PasswordResetRequested",
    data: { resetId: "r-1", email: "sealed-address", expiresAt: "2026-01-01T01:00:00.000Z" },
  };
  const reset = (resetId: string, now = LATER) =>
    ({ type: "ResetPassword", resetId, sealedPasswordHash: "new-sealed", now }) as const;
  const change = (currentPasswordMatches: boolean) =>
    ({
      type: "ChangePassword",
      currentPasswordMatches,
      sealedPasswordHash: "changed-sealed",
      sessionId: "s-1",
      now: LATER,
    }) as const;

  it("resends a verification link only while the address is unconfirmed; the new one replaces the old", () => {
    const resend = {
      type: "ResendVerification" as const,
      verificationId: "v-2",
      email: "sealed-address",
      now: NOW,
    };
    const again: HumanEvent = {
      type: "EmailVerificationRequested",
      data: { verificationId: "v-2", email: "sealed-address", expiresAt: "2026-01-02T00:00:00.000Z" },
    };
    given(humanDecider, [signedUp, requested]).when(resend).then([again]);
    given(humanDecider, [signedUp, requested, again])
      .when({ type: "VerifyEmail", verificationId: "v-1", now: NOW })
      .thenRefused("INVALID_TOKEN");
    given(humanDecider, [signedUp, requested, verified]).when(resend).thenRefused("CONFLICT");
    given(humanDecider, []).when(resend).thenRefused("CONFLICT");
  });

  it("opens a one-hour reset for a person's account only", () => {
    const ask = { type: "RequestPasswordReset" as const, resetId: "r-1", email: "sealed-address", now: NOW };
    given(humanDecider, [signedUp, requested, verified]).when(ask).then([resetAsked]);
    given(humanDecider, []).when(ask).thenRefused("NOT_FOUND");
  });

  it("resets the password with the newest open reset, once, within the hour", () => {
    const done: HumanEvent = {
      type: "PasswordReset",
      data: { resetId: "r-1", sealedPasswordHash: "new-sealed", at: LATER },
    };
    given(humanDecider, [signedUp, verified, resetAsked]).when(reset("r-1")).then([done]);
    given(humanDecider, [signedUp, verified, resetAsked, done])
      .when(reset("r-1"))
      .thenRefused("INVALID_TOKEN");
    given(humanDecider, [signedUp, verified, resetAsked])
      .when(reset("r-1", "2026-01-01T01:00:00.000Z"))
      .thenRefused("INVALID_TOKEN");
    const newer: HumanEvent = {
      type: "PasswordResetRequested",
      data: { ...resetAsked.data, resetId: "r-2" },
    };
    given(humanDecider, [signedUp, verified, resetAsked, newer])
      .when(reset("r-1"))
      .thenRefused("INVALID_TOKEN");
    given(humanDecider, [signedUp, verified]).when(reset("r-1")).thenRefused("INVALID_TOKEN");
  });

  it("changes the password only with the current one; the change voids an open reset and keeps the caller's session", () => {
    const changed: HumanEvent = {
      type: "PasswordChanged",
      data: { sealedPasswordHash: "changed-sealed", keptSessionId: "s-1", at: LATER },
    };
    given(humanDecider, [signedUp, verified, resetAsked]).when(change(true)).then([changed]);
    given(humanDecider, [signedUp, verified]).when(change(false)).thenRefused("FORBIDDEN");
    given(humanDecider, []).when(change(true)).thenRefused("FORBIDDEN");
    given(humanDecider, [signedUp, verified, resetAsked, changed])
      .when(reset("r-1"))
      .thenRefused("INVALID_TOKEN");
    const state = [signedUp, verified, changed].reduce(humanDecider.evolve, humanDecider.initialState());
    expect(state).toMatchObject({ sealedPasswordHash: "changed-sealed" });
  });
});

describe("session decider", () => {
  const started: SessionEvent = {
    type: "SessionStarted",
    data: { sessionId: "s-1", accountId: "a-1", startedAt: NOW, expiresAt: "2026-01-01T12:00:00.000Z" },
  };
  it("starts a 12-hour session once; ending it twice records one end", () => {
    given(sessionDecider, [])
      .when({ type: "StartSession", sessionId: "s-1", accountId: "a-1", now: NOW })
      .then([started]);
    const ended: SessionEvent = { type: "SessionEnded", data: { at: NOW } };
    given(sessionDecider, [started]).when({ type: "EndSession", now: NOW }).then([ended]);
    given(sessionDecider, [started, ended]).when({ type: "EndSession", now: NOW }).then([]);
  });
});
