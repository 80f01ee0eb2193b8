import { randomUUID } from "node:crypto";
import { accountDecider, claimEmail, type EmailClaimEvent, emailTaken } from "../../domain/account.js";
import { apiKeyDecider } from "../../domain/api-key.js";
import { DomainError } from "../../domain/decider.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import { streams } from "../../domain/streams.js";
import type { EventStore, ExpectedVersion } from "../eventstore/port.js";
import { normalEmail } from "../privacy/personal-data.js";
import { sha256Hex } from "../security/secrets.js";
import { mintApiKey } from "./api-keys.js";
import type { CommandDeps } from "./deps.js";
import { handle } from "./handle.js";
import { type Actor, accepted, load } from "./streams.js";

/**
 * The display name of an account created without one: the e-mail's local part. Never the whole
 * address, since names are shown to connected accounts (sendable, ambiguity candidates).
 */
export function defaultAccountName(email: string): string {
  return email.slice(0, email.indexOf("@")) || email;
}

/** The claim stream of an address as named before decisions 6.5: still read, so old claims hold. */
export function legacyClaimStream(email: string): string {
  return streams.accountEmail(sha256Hex(normalEmail(email)));
}

/** An address's claim stream folds to its claims, in order: what claimEmail and releaseEmail decide on. */
export const claimLog = {
  initialState: (): EmailClaimEvent[] => [],
  evolve: (claims: EmailClaimEvent[], claim: EmailClaimEvent) => [...claims, claim],
};

export async function readClaims(store: EventStore, streamId: string): Promise<EmailClaimEvent[]> {
  return (await load(store, claimLog, streamId)).state;
}

export interface NewAccount {
  email: string;
  name: string;
  plan: string;
}

/**
 * Creates an account with its first API key, in one atomic append over four streams: the e-mail
 * claim (so an address is used once, whoever commits first), the account, its key roster and the key.
 */
/** A new account's person: its id, and its address and name sealed under its data key (decisions 6.5). */
export async function sealedPerson(deps: Pick<CommandDeps, "people">, email: string, name: string) {
  const personId = await deps.people.personFor(email);
  return {
    personId,
    email: await deps.people.seal(personId, email),
    name: await deps.people.seal(personId, name),
  };
}

/**
 * The claim of an address for a new account, on its person's claim stream; refused while an
 * account holds it, there or on the stream named the way claims were named before sealing.
 */
export async function claimAddress(
  store: EventStore,
  email: string,
  personId: string,
  accountId: string,
): Promise<{ streamId: string; expected: ExpectedVersion; events: EmailClaimEvent[] }> {
  if (emailTaken(await readClaims(store, legacyClaimStream(email)))) {
    throw new DomainError("ACCOUNT_EXISTS", "an account with this e-mail already exists");
  }
  const claims = await load(store, claimLog, streams.accountEmail(personId));
  const { streamId, expected, state } = claims;
  return { streamId, expected, events: accepted(claimEmail(state, accountId)) };
}

/** The account holding an address now, from its claim streams (the person's, then the legacy one). */
export async function accountHolding(deps: Pick<CommandDeps, "store" | "people">, email: string) {
  const personId = await deps.people.findPerson(email);
  for (const streamId of [...(personId ? [streams.accountEmail(personId)] : []), legacyClaimStream(email)]) {
    const claims = await readClaims(deps.store, streamId);
    const last = claims.at(-1);
    if (last?.type === "AccountEmailClaimed") return last.data.accountId;
  }
  return null;
}

export async function createAccount(deps: CommandDeps, input: NewAccount, actor: Actor) {
  const { personId, email, name } = await sealedPerson(deps, input.email, input.name);
  return handle(deps, {}, async (turn) => {
    const now = turn.at();
    const accountId = randomUUID();
    const creator = { ...actor, accountId };
    const claim = await claimAddress(deps.store, input.email, personId, accountId);
    turn.record(claim, claim.events, creator);

    const limits = limitsOf(input.plan);
    const account = turn.newStream(accountDecider, streams.account(accountId));
    const created = turn.decide(
      accountDecider,
      account,
      { type: "CreateAccount", accountId, email, name, personId, plan: input.plan, kind: "agent", now },
      { limits },
      creator,
    );
    const { issued, command } = mintApiKey(deps, accountId, "default", now);
    const afterCreate = { ...account, state: created.reduce(accountDecider.evolve, account.state) };
    turn.decide(accountDecider, afterCreate, { type: "AddApiKey", keyId: issued.id }, { limits }, creator);
    const key = turn.newStream(apiKeyDecider, streams.apiKey(issued.id));
    turn.decide(apiKeyDecider, key, command, undefined, creator);
    return { accountId, apiKey: issued };
  });
}

export async function changePlan(deps: CommandDeps, accountId: string, plan: string, actor: Actor) {
  return handle(deps, { actor }, async (turn) => {
    const account = await turn.load(accountDecider, streams.account(accountId));
    turn.decide(accountDecider, account, { type: "ChangePlan", plan }, { limits: limitsOf(plan) });
    return {};
  });
}
