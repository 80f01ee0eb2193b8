import { randomUUID } from "node:crypto";
import { accountDecider, claimEmail, type EmailClaimEvent, emailTaken } from "../../domain/account.js";
import { apiKeyDecider } from "../../domain/api-key.js";
import { DomainError } from "../../domain/decider.js";
import { streams } from "../../domain/streams.js";
import { type EventStore, NO_STREAM } from "../eventstore/port.js";
import { limitsOf } from "../plans/catalog.js";
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
export async function createAccount(deps: CommandDeps, input: NewAccount, actor: Actor) {
  const personId = await deps.people.personFor(input.email);
  const email = await deps.people.seal(personId, input.email);
  const name = await deps.people.seal(personId, input.name);
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const accountId = randomUUID();
    if (emailTaken(await readClaims(deps.store, legacyClaimStream(input.email)))) {
      throw new DomainError("ACCOUNT_EXISTS", "an account with this e-mail already exists");
    }
    const emailStream = streams.accountEmail(personId);
    const claimEvents = accepted(claimEmail(await readClaims(deps.store, emailStream), accountId));

    const limits = limitsOf(input.plan);
    const account = { streamId: streams.account(accountId), expected: NO_STREAM } as const;
    const created = accepted(
      accountDecider.decide(
        { type: "CreateAccount", accountId, email, name, personId, plan: input.plan, now },
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
      toAppend({ streamId: emailStream, expected: NO_STREAM }, claimEvents, creator, now),
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
