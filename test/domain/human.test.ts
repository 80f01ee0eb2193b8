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
