import { type Decider, type Decision, refuse, unreachable } from "./decider.js";

/**
 * A person's side of a human account (decisions section 4): the password, the e-mail check and
 * the receiving key. The account itself (plan, roster) stays on the account stream; this stream
 * holds what only people have, so the account decider and its snapshots are untouched.
 *
 * Secrets never appear here in clear: the password hash is sealed under the server key before
 * it reaches a command, and a verification is named by a random id whose link the server signs
 * (src/security/human-tokens.ts), so neither the link nor a digest of it is in the log.
 */
export interface ReceivingKeyKdf {
  algorithm: "argon2id";
  salt: string;
  memoryKib: number;
  iterations: number;
  parallelism: number;
}

export interface ReceivingKey {
  publicKey: string;
  kdf: ReceivingKeyKdf;
  keyVersion: number;
}

export type HumanEvent =
  | { type: "HumanSignedUp"; data: { accountId: string; sealedPasswordHash: string; at: string } }
  | {
      type: "EmailVerificationRequested";
      data: { verificationId: string; email: string; expiresAt: string };
    }
  | { type: "EmailVerified"; data: { verificationId: string; at: string } }
  | { type: "ReceivingKeySet"; data: ReceivingKey & { at: string } }
  | {
      type: "PasswordResetRequested";
      data: { resetId: string; email: string; expiresAt: string };
    }
  /** Every session of the account ends with it (projections/humans.ts). */
  | { type: "PasswordReset"; data: { resetId: string; sealedPasswordHash: string; at: string } }
  /** Every session of the account but `keptSessionId` (the one that changed it) ends with it. */
  | { type: "PasswordChanged"; data: { sealedPasswordHash: string; keptSessionId: string; at: string } };

export type HumanCommand =
  | {
      type: "SignUp";
      accountId: string;
      email: string;
      sealedPasswordHash: string;
      verificationId: string;
      now: string;
    }
  /** `verificationId`: the one the presented link was signed for, once its signature checked out. */
  | { type: "VerifyEmail"; verificationId: string; now: string }
  | { type: "SetReceivingKey"; publicKey: string; kdf: ReceivingKeyKdf; now: string }
  /** A new link for an address not yet confirmed; it supersedes the open one. */
  | { type: "ResendVerification"; verificationId: string; email: string; now: string }
  | { type: "RequestPasswordReset"; resetId: string; email: string; now: string }
  /** `resetId`: the one the presented link was signed for, once its signature checked out. */
  | { type: "ResetPassword"; resetId: string; sealedPasswordHash: string; now: string }
  | {
      type: "ChangePassword";
      /** Checked outside (scrypt is slow and async), as at login. */
      currentPasswordMatches: boolean;
      sealedPasswordHash: string;
      /** The session that asked: it stays open, the others end. */
      sessionId: string;
      now: string;
    };

export type HumanState =
  | { status: "none" }
  | {
      status: "unverified" | "verified";
      sealedPasswordHash: string;
      /** The verification still open, if any. */
      verification: { verificationId: string; expiresAt: string } | null;
      /** The password reset still open, if any. */
      reset: { resetId: string; expiresAt: string } | null;
      receivingKey: ReceivingKey | null;
    };

/** Decisions 4.2: a verification link lives 24 hours. */
export const VERIFICATION_LIFETIME_MS = 24 * 3600 * 1000;

/** A password-reset link lives one hour: it is worth the whole account. */
export const RESET_LIFETIME_MS = 3600 * 1000;

const expiresAfter = (now: string, lifetimeMs: number) =>
  new Date(Date.parse(now) + lifetimeMs).toISOString();

/** Whether a presented link is good: one still open (not used), the very one presented, not past its time. */
const stillOpen = <Open extends { expiresAt: string }>(open: Open | null, matches: boolean, now: string) =>
  open !== null && matches && Date.parse(now) < Date.parse(open.expiresAt);

function decide(command: HumanCommand, state: HumanState): Decision<HumanEvent> {
  if (command.type === "SignUp") {
    if (state.status !== "none")
      return refuse("ACCOUNT_EXISTS", "an account with this e-mail already exists");
    const { accountId, email, sealedPasswordHash, verificationId, now } = command;
    const expiresAt = expiresAfter(now, VERIFICATION_LIFETIME_MS);
    return [
      { type: "HumanSignedUp", data: { accountId, sealedPasswordHash, at: now } },
      { type: "EmailVerificationRequested", data: { verificationId, email, expiresAt } },
    ];
  }
  switch (command.type) {
    case "VerifyEmail": {
      const open = state.status === "unverified" ? state.verification : null;
      // One answer for every bad link: unknown, used, superseded or expired.
      if (!stillOpen(open, open?.verificationId === command.verificationId, command.now)) {
        return refuse("INVALID_TOKEN", "this verification link is invalid, used or expired");
      }
      return [{ type: "EmailVerified", data: { verificationId: command.verificationId, at: command.now } }];
    }
    case "SetReceivingKey": {
      if (state.status !== "verified") return refuse("EMAIL_NOT_VERIFIED", "verify the e-mail address first");
      const keyVersion = (state.receivingKey?.keyVersion ?? 0) + 1;
      return [
        {
          type: "ReceivingKeySet",
          data: { publicKey: command.publicKey, kdf: command.kdf, keyVersion, at: command.now },
        },
      ];
    }
    case "ResendVerification": {
      if (state.status !== "unverified") return refuse("CONFLICT", "this address is confirmed already");
      const { verificationId, email, now } = command;
      const expiresAt = expiresAfter(now, VERIFICATION_LIFETIME_MS);
      return [{ type: "EmailVerificationRequested", data: { verificationId, email, expiresAt } }];
    }
    case "RequestPasswordReset": {
      if (state.status === "none") return refuse("NOT_FOUND", "no such account");
      const { resetId, email, now } = command;
      const expiresAt = expiresAfter(now, RESET_LIFETIME_MS);
      return [{ type: "PasswordResetRequested", data: { resetId, email, expiresAt } }];
    }
    case "ResetPassword": {
      const open = state.status === "none" ? null : state.reset;
      if (!stillOpen(open, open?.resetId === command.resetId, command.now)) {
        return refuse("INVALID_TOKEN", "this password-reset link is invalid, used or expired");
      }
      const { resetId, sealedPasswordHash, now } = command;
      return [{ type: "PasswordReset", data: { resetId, sealedPasswordHash, at: now } }];
    }
    case "ChangePassword": {
      if (state.status === "none") return refuse("FORBIDDEN", "only a person's account has a login password");
      if (!command.currentPasswordMatches) return refuse("FORBIDDEN", "the current password is wrong");
      const { sealedPasswordHash, sessionId, now } = command;
      return [{ type: "PasswordChanged", data: { sealedPasswordHash, keptSessionId: sessionId, at: now } }];
    }
    default:
      return unreachable(command);
  }
}

function evolve(state: HumanState, event: HumanEvent): HumanState {
  if (event.type === "HumanSignedUp") {
    return {
      status: "unverified",
      sealedPasswordHash: event.data.sealedPasswordHash,
      verification: null,
      reset: null,
      receivingKey: null,
    };
  }
  if (state.status === "none") return state;
  switch (event.type) {
    case "EmailVerificationRequested":
      return {
        ...state,
        verification: { verificationId: event.data.verificationId, expiresAt: event.data.expiresAt },
      };
    case "EmailVerified":
      return { ...state, status: "verified", verification: null };
    case "ReceivingKeySet": {
      const { publicKey, kdf, keyVersion } = event.data;
      return { ...state, receivingKey: { publicKey, kdf, keyVersion } };
    }
    case "PasswordResetRequested":
      return { ...state, reset: { resetId: event.data.resetId, expiresAt: event.data.expiresAt } };
    case "PasswordReset":
      return { ...state, sealedPasswordHash: event.data.sealedPasswordHash, reset: null };
    case "PasswordChanged":
      // A reset link asked for before the change would undo it: it is void now.
      return { ...state, sealedPasswordHash: event.data.sealedPasswordHash, reset: null };
    default:
      return unreachable(event);
  }
}

export const humanDecider: Decider<HumanCommand, HumanEvent, HumanState, undefined> = {
  initialState: () => ({ status: "none" }),
  evolve,
  decide: (command, state) => decide(command, state),
};

/** The events after which the account's sessions end (all, or all but the caller's). */
export function setsNewPassword(type: string): type is "PasswordReset" | "PasswordChanged" {
  return type === "PasswordReset" || type === "PasswordChanged";
}

/**
 * Decisions 4.3: whether a login with a checked password starts a session. A wrong password and an
 * unknown e-mail are the same 401; the 403 for an unverified address comes only after the password
 * matched, so it tells nothing to someone who does not know it.
 */
export function decideLogin(state: HumanState, passwordMatches: boolean): DomainErrorOrOk {
  if (state.status === "none" || !passwordMatches) {
    return refuse("UNAUTHORIZED", "wrong e-mail or password");
  }
  if (state.status !== "verified") return refuse("EMAIL_NOT_VERIFIED", "verify the e-mail address first");
  return "ok";
}

type DomainErrorOrOk = ReturnType<typeof refuse> | "ok";
