import { randomUUID } from "node:crypto";
import { accountDecider, claimEmail, type EmailClaimEvent, emailTaken } from "../../domain/account.js";
import { apiKeyDecider } from "../../domain/api-key.js";
import { DomainError } from "../../domain/decider.js";
import { limitsOf } from "../../domain/plans/catalog.js";
import { streams } from "../../domain/streams.js";
import { type EventStore, type ExpectedVersion, NO_STREAM } from "../eventstore/port.js";
import { normalEmail } from "../privacy/personal-data.js";
import { sha256Hex } from "../security/secrets.js";
import { mintApiKey } from "./api-keys.js";
import type { CommandDeps } from "./deps.js";
import { type Actor, accepted, appendAll, load, retryOnConflict, toAppend } from "./streams.js";

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

export async function readClaims(store: EventStore, streamId: string): Promise<EmailClaimEvent[]> {
  return (await store.readStream(streamId)).map((e) => ({ type: e.type, data: e.data }) as EmailClaimEvent);
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
  const streamId = streams.accountEmail(personId);
  const recorded = await store.readStream(streamId);
  const claims = recorded.map((e) => ({ type: e.type, data: e.data }) as EmailClaimEvent);
  return {
    streamId,
    expected: recorded.at(-1)?.revision ?? NO_STREAM,
    events: accepted(claimEmail(claims, accountId)),
  };
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
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const accountId = randomUUID();
    const claim = await claimAddress(deps.store, input.email, personId, accountId);

    const limits = limitsOf(input.plan);
    const account = { streamId: streams.account(accountId), expected: NO_STREAM } as const;
    const created = accepted(
      accountDecider.decide(
        { type: "CreateAccount", accountId, email, name, personId, plan: input.plan, kind: "agent", now },
        accountDecider.initialState(),
        { limits },
      ),
    );
    const { issued, command } = mintApiKey(deps, accountId, "default", now);
    const afterCreate = created.reduce(accountDecider.evolve, accountDecider.initialState());
    const keyAdded = accepted(
      accountDecider.decide({ type: "AddApiKey", keyId: issued.id }, afterCreate, { limits }),
    );
    const keyEvents = accepted(apiKeyDecider.decide(command, apiKeyDecider.initialState(), undefined));

    const creator = { ...actor, accountId };
    const position = await appendAll(deps.store, [
      toAppend(claim, claim.events, creator, now),
      toAppend(account, [...created, ...keyAdded], creator, now),
      toAppend({ streamId: streams.apiKey(issued.id), expected: NO_STREAM }, keyEvents, creator, now),
    ]);
    return { position, accountId, apiKey: issued };
  });
}

export async function changePlan(deps: CommandDeps, accountId: string, plan: string, actor: Actor) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const account = await load(deps.store, accountDecider, streams.account(accountId));
    const events = accepted(
      accountDecider.decide({ type: "ChangePlan", plan }, account.state, { limits: limitsOf(plan) }),
    );
    const position = await appendAll(deps.store, [toAppend(account, events, actor, now)]);
    return { position };
  });
}
