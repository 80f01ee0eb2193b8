import { randomUUID } from "node:crypto";
import { accountDecider } from "../../domain/account.js";
import { DomainError, refuse } from "../../domain/decider.js";
import {
  decideLogin,
  type HumanCommand,
  type HumanState,
  humanDecider,
  type ReceivingKeyKdf,
  setsNewPassword,
} from "../../domain/human.js";
import { DEFAULT_PLAN, limitsOf } from "../../domain/plans/catalog.js";
import { sessionDecider } from "../../domain/session.js";
import { streams } from "../../domain/streams.js";
import { normalEmail } from "../privacy/personal-data.js";
import { findAccount } from "../queries/accounts.js";
import type { RateLimitCounter } from "../rate-limits/counter.js";
import { ACCOUNT_MAIL_REQUESTS, LOGIN_FAILURES } from "../rate-limits/policy.js";
import type { HumanTokens } from "../security/human-tokens.js";
import { burnPasswordCheck, hashPassword, passwordMatches } from "../security/passwords.js";
import { sha256Hex } from "../security/secrets.js";
import { accountHolding, claimAddress, defaultAccountName, sealedPerson } from "./accounts.js";
import { handle } from "./handle.js";
import { type Actor, type Loaded, load } from "./streams.js";
import { activateHeldFor } from "./transfers/activate.js";
import type { TransferDeps } from "./transfers/record.js";

/**
 * What the people commands need beyond the transfer commands' deps: the server's signatures and
 * the per-address counts.
 */
export interface HumanDeps extends TransferDeps {
  tokens: HumanTokens;
  /** Per-address counts: failed logins and password checks, account e-mails asked for. */
  addressCounts: RateLimitCounter;
}

/**
 * A person acting on their own account before (or while getting) a session: signing up,
 * verifying, logging in. Recorded as the session kind of actor (decisions 6.1).
 */
const personActing = (accountId: string | null, requestId: string | null): Actor => ({
  kind: "session",
  accountId,
  keyId: null,
  requestId,
});

/**
 * Decisions 4.1: a human account, in one atomic append over three streams: the e-mail claim (an
 * address is used once, by a person or an agent account alike), the account (`kind: "human"`, no
 * API key yet) and the person's stream with the sealed password hash and the verification that
 * the verify e-mail links to.
 */
export async function signUp(
  deps: HumanDeps,
  input: { email: string; password: string; name: string | null },
  requestId: string | null,
) {
  const sealedPasswordHash = await hashPassword(deps.serverKey, input.password);
  // The address and name are personal data: sealed under the person's data key (decisions 6.5).
  const person = await sealedPerson(deps, input.email, input.name ?? defaultAccountName(input.email));
  return handle(deps, {}, async (turn) => {
    const now = turn.at();
    const accountId = randomUUID();
    const actor = personActing(accountId, requestId);
    const claim = await claimAddress(deps.store, input.email, person.personId, accountId);
    turn.record(claim, claim.events, actor);
    turn.decide(
      accountDecider,
      turn.newStream(accountDecider, streams.account(accountId)),
      {
        type: "CreateAccount",
        accountId,
        email: person.email,
        name: person.name,
        personId: person.personId,
        plan: DEFAULT_PLAN,
        kind: "human",
        now,
      },
      { limits: limitsOf(DEFAULT_PLAN) },
      actor,
    );
    turn.decide(
      humanDecider,
      turn.newStream(humanDecider, streams.human(accountId)),
      {
        type: "SignUp",
        accountId,
        email: person.email,
        sealedPasswordHash,
        verificationId: randomUUID(),
        now,
      },
      undefined,
      actor,
    );
    return { accountId };
  });
}

const invalidToken = () =>
  new DomainError("INVALID_TOKEN", "this verification link is invalid, used or expired");

/** Decisions 4.2: the link's signature names the account and its open verification; single use, 24 hours. */
export async function verifyEmail(deps: HumanDeps, token: string, requestId: string | null) {
  const accountId = deps.tokens.accountOfLink("verify", token);
  if (!accountId) throw invalidToken();
  return handle(deps, { actor: personActing(accountId, requestId) }, async (turn) => {
    const human = await turn.load(humanDecider, streams.human(accountId));
    const open = human.state.status === "unverified" ? human.state.verification : null;
    if (!open || !deps.tokens.linkMatches("verify", token, accountId, open.verificationId))
      throw invalidToken();
    turn.decide(
      humanDecider,
      human,
      { type: "VerifyEmail", verificationId: open.verificationId, now: turn.at() },
      undefined,
    );
    return { accountId };
  });
}

/** Too many attempts for one address in a window (decisions 4.3): retry after this many seconds. */
export class Throttled extends Error {
  constructor(
    what: string,
    readonly retryAfterSeconds: number,
  ) {
    super(`too many ${what} for this address; retry after ${retryAfterSeconds} s`);
    this.name = "Throttled";
  }
}

interface PerAddressLimit {
  name: string;
  limit: number;
  windowMs: number;
}

/**
 * The current window of a per-address limit, counted under a digest of the address (never the
 * address itself); refused before any work once it holds `limit` hits. `hit` counts one more.
 */
async function addressWindow(deps: HumanDeps, policy: PerAddressLimit, email: string, what: string) {
  const bucket = `${policy.name}:${sha256Hex(normalEmail(email))}`;
  const nowMs = deps.clock.now().getTime();
  const windowStart = Math.floor(nowMs / policy.windowMs) * policy.windowMs;
  const hits = await deps.addressCounts.count(bucket, windowStart, policy.windowMs);
  if (hits >= policy.limit) {
    throw new Throttled(what, Math.max(1, Math.ceil((windowStart + policy.windowMs - nowMs) / 1000)));
  }
  return { hit: () => deps.addressCounts.hit(bucket, windowStart, policy.windowMs) };
}

/**
 * Decisions 4.3: checks the password (scrypt, or the same work for an unknown address, so both
 * answers look alike), counts a failure per address, and starts a 12-hour session. An address with
 * LOGIN_FAILURES.limit failures in the current window is refused before any check.
 */
export async function logIn(
  deps: HumanDeps,
  input: { email: string; password: string },
  requestId: string | null,
) {
  const failures = await addressWindow(deps, LOGIN_FAILURES, input.email, "failed logins");

  // An erased person's address is held by no account any more: the same 401 as an unknown one.
  const accountId = await accountHolding(deps, input.email);
  const human = accountId ? await load(deps.store, humanDecider, streams.human(accountId)) : null;
  const state = human?.state ?? humanDecider.initialState();
  let matches = false;
  if (state.status === "none") await burnPasswordCheck(deps.serverKey, input.password);
  else matches = await passwordMatches(deps.serverKey, state.sealedPasswordHash, input.password);

  const verdict = decideLogin(state, matches);
  if (verdict !== "ok") {
    if (verdict.code === "UNAUTHORIZED") await failures.hit();
    throw verdict;
  }
  const sessionId = randomUUID();
  const actor = personActing(accountId, requestId);
  const { position, started } = await handle(deps, { actor }, async (turn) => {
    const session = turn.newStream(sessionDecider, streams.session(sessionId));
    const command = {
      type: "StartSession" as const,
      sessionId,
      accountId: accountId as string,
      now: turn.at(),
    };
    return { started: turn.decide(sessionDecider, session, command, undefined) };
  });
  // A new password recorded between this check and this session ended the sessions the read
  // model held then, not this one: it ends here, refused as the old password now is.
  if (human && (await passwordSetSince(deps, human))) {
    await logOut(deps, sessionId, actor);
    throw refuse("UNAUTHORIZED", "wrong e-mail or password");
  }
  const data = started[0]?.data as { expiresAt: string };
  return {
    position,
    accountId: accountId as string,
    token: deps.tokens.sessionToken(sessionId),
    expiresAt: data.expiresAt,
  };
}

/** Whether the person's stream holds a new password after the version `loaded` was read at. */
async function passwordSetSince(deps: HumanDeps, loaded: Loaded<HumanState>): Promise<boolean> {
  const next = typeof loaded.expected === "number" ? loaded.expected + 1 : 0;
  const later = await deps.store.readStream(loaded.streamId, next);
  return later.some((event) => setsNewPassword(event.type));
}

/** Decisions 4.3: ends the caller's session at once (the next request with it is 401). */
export async function logOut(deps: HumanDeps, sessionId: string, actor: Actor) {
  return handle(deps, { actor }, async (turn) => {
    const session = await turn.load(sessionDecider, streams.session(sessionId));
    turn.decide(sessionDecider, session, { type: "EndSession", now: turn.at() }, undefined);
    return {};
  });
}

/**
 * Decisions 4.4–4.5: records the person's receiving public key (setting it again is a rotation),
 * then activates every transfer held for their address by wrapping its content key to it.
 * `settle` waits for the read models to show the key before the held transfers are looked up.
 */
export async function setReceivingKey(
  deps: HumanDeps,
  actor: Actor & { accountId: string },
  input: { publicKey: string; kdf: ReceivingKeyKdf },
  settle: (position: string | null) => Promise<void>,
) {
  const set = await recordReceivingKey(deps, actor, input);
  await settle(set.position);
  const account = await findAccount(deps.db, deps.people, actor.accountId);
  if (!account)
    throw new Error(`account ${actor.accountId} missing from the read model after its write settled`);
  const activated = await activateHeldFor(
    deps,
    { accountId: actor.accountId, email: account.email, receivingKey: set.receivingKey },
    actor,
    (error) => console.error("activating a held transfer failed:", error),
  );
  return { position: activated ?? set.position, receivingKey: set.receivingKey };
}

function recordReceivingKey(
  deps: HumanDeps,
  actor: Actor & { accountId: string },
  input: { publicKey: string; kdf: ReceivingKeyKdf },
) {
  return handle(deps, { actor }, async (turn) => {
    const human = await turn.load(humanDecider, streams.human(actor.accountId));
    if (human.state.status === "none")
      throw new DomainError("FORBIDDEN", "only a person's account has a receiving key");
    const events = turn.decide(
      humanDecider,
      human,
      { type: "SetReceivingKey", ...input, now: turn.at() },
      undefined,
    );
    const state = events.reduce(humanDecider.evolve, human.state);
    if (state.status === "none" || !state.receivingKey) throw new Error("a receiving key set is missing");
    return { receivingKey: state.receivingKey };
  });
}

/**
 * Forgot password and resend verification: an e-mail to the address's account when there is one
 * to send (a person's account; for a new verify link, one not confirmed yet). The caller answers
 * the same whatever happened, so nobody learns whether an address has an account; every request
 * counts against the address's ACCOUNT_MAIL_REQUESTS, known or not.
 */
async function mailAccountHolder(
  deps: HumanDeps,
  email: string,
  requestId: string | null,
  command: (sealedEmail: string, now: string) => HumanCommand,
): Promise<void> {
  const requests = await addressWindow(deps, ACCOUNT_MAIL_REQUESTS, email, "e-mails asked for");
  await requests.hit();
  const accountId = await accountHolding(deps, email);
  const personId = accountId ? await deps.people.findPerson(email) : null;
  if (!accountId || !personId) return;
  const sealedEmail = await deps.people.seal(personId, email.trim());
  await handle(deps, { actor: personActing(accountId, requestId) }, async (turn) => {
    const human = await turn.load(humanDecider, streams.human(accountId));
    const decision = humanDecider.decide(command(sealedEmail, turn.at()), human.state, undefined);
    // An agent's account or a confirmed address: nothing to send, and the same answer as any.
    if (!(decision instanceof DomainError)) turn.record(human, decision);
    return {};
  });
}

/** A new verification link (24 hours) for an address not confirmed yet; the previous link stops working. */
export function resendVerification(deps: HumanDeps, email: string, requestId: string | null) {
  return mailAccountHolder(deps, email, requestId, (sealedEmail, now) => ({
    type: "ResendVerification",
    verificationId: randomUUID(),
    email: sealedEmail,
    now,
  }));
}

/** A password-reset link (single use, one hour) to the address of a person's account. */
export function requestPasswordReset(deps: HumanDeps, email: string, requestId: string | null) {
  return mailAccountHolder(deps, email, requestId, (sealedEmail, now) => ({
    type: "RequestPasswordReset",
    resetId: randomUUID(),
    email: sealedEmail,
    now,
  }));
}

const invalidResetToken = () =>
  new DomainError("INVALID_TOKEN", "this password-reset link is invalid, used or expired");

/**
 * A new login password from the link of the reset e-mail: the link's signature names the account
 * and its open reset (single use, one hour). Every session of the account ends with it.
 */
export async function resetPassword(
  deps: HumanDeps,
  input: { token: string; password: string },
  requestId: string | null,
) {
  const accountId = deps.tokens.accountOfLink("reset", input.token);
  if (!accountId) throw invalidResetToken();
  return handle(deps, { actor: personActing(accountId, requestId) }, async (turn) => {
    const human = await turn.load(humanDecider, streams.human(accountId));
    const open = human.state.status === "none" ? null : human.state.reset;
    if (!open || !deps.tokens.linkMatches("reset", input.token, accountId, open.resetId))
      throw invalidResetToken();
    const sealedPasswordHash = await hashPassword(deps.serverKey, input.password);
    turn.decide(
      humanDecider,
      human,
      { type: "ResetPassword", resetId: open.resetId, sealedPasswordHash, now: turn.at() },
      undefined,
    );
    return { accountId };
  });
}

/**
 * A new login password, given the current one: wrong guesses count as failed logins of the
 * account's address (so a stolen session cannot try passwords faster than a login could). Every
 * other session of the account ends; the caller's stays open.
 */
export async function changePassword(
  deps: HumanDeps,
  actor: Actor & { accountId: string; sessionId: string },
  input: { currentPassword: string; newPassword: string },
) {
  const account = await findAccount(deps.db, deps.people, actor.accountId);
  if (!account) throw new DomainError("FORBIDDEN", "only a person's account has a login password");
  const failures = await addressWindow(deps, LOGIN_FAILURES, account.email, "failed password checks");
  return handle(deps, { actor }, async (turn) => {
    const human = await turn.load(humanDecider, streams.human(actor.accountId));
    if (human.state.status === "none")
      throw new DomainError("FORBIDDEN", "only a person's account has a login password");
    // Both scrypt runs at once: a wrong guess costs as long as a right one.
    const [currentPasswordMatches, sealedPasswordHash] = await Promise.all([
      passwordMatches(deps.serverKey, human.state.sealedPasswordHash, input.currentPassword),
      hashPassword(deps.serverKey, input.newPassword),
    ]);
    if (!currentPasswordMatches) await failures.hit();
    turn.decide(
      humanDecider,
      human,
      {
        type: "ChangePassword",
        currentPasswordMatches,
        sealedPasswordHash,
        sessionId: actor.sessionId,
        now: turn.at(),
      },
      undefined,
    );
    return {};
  });
}
