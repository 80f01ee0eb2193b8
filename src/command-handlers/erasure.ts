import { randomUUID } from "node:crypto";
import type { Knex } from "knex";
import { type AccountEvent, accountDecider, releaseEmail } from "../../domain/account.js";
import { DomainError } from "../../domain/decider.js";
import type { ErasureEvent } from "../../domain/erasure.js";
import { ERASED } from "../../domain/personal-data.js";
import { streams } from "../../domain/streams.js";
import { forgetStoredAnswers } from "../db/stored-answers.js";
import { NO_STREAM, type Position } from "../eventstore/port.js";
import type { Mailer } from "../mail/mailer.js";
import { normalEmail } from "../privacy/personal-data.js";
import { decideOnAccount } from "./account-stream.js";
import { claimLog, legacyClaimStream } from "./accounts.js";
import type { CommandDeps } from "./deps.js";
import { handle } from "./handle.js";
import { type Actor, load } from "./streams.js";

/** What an erasure reaches beyond the log: the read models' database and the outgoing mail. */
export interface ErasureDeps extends CommandDeps {
  db: Knex;
  mailer: Mailer;
  /** Waits until the read models have applied `position` (their redactions included). */
  settle(position: Position | null): Promise<void>;
}

export interface Erasure {
  erasureId: string;
  accountId: string | null;
  transfers: number;
  erasedAt: string;
}

/** The person to erase: their address in clear (null when it is already unreadable) and data key. */
interface Subject {
  email: string | null;
  personId: string | null;
  accountId: string | null;
}

/**
 * Decisions 6.5, by account: its e-mail address and name become unreadable everywhere, its keys
 * stop working, and its address is free again.
 */
export async function eraseAccount(deps: ErasureDeps, accountId: string, actor: Actor): Promise<Erasure> {
  const account = await load(deps.store, accountDecider, streams.account(accountId));
  if (!account.state.exists) throw new DomainError("NOT_FOUND", "no such account");
  const recorded = await deps.store.readStream(streams.account(accountId));
  const done = recorded.find((event) => event.type === "AccountErased")?.data as
    | Extract<AccountEvent, { type: "AccountErased" }>["data"]
    | undefined;
  // Erasing again changes nothing: the answer is the first erasure's.
  if (done) return { erasureId: done.erasureId, accountId, transfers: 0, erasedAt: done.at };
  const created = recorded[0];
  const data = created?.data as Extract<AccountEvent, { type: "AccountCreated" }>["data"];
  const email = await deps.people.revealOne(data.email);
  return erase(deps, { email: email === ERASED ? null : email, personId: data.personId, accountId }, actor);
}

/**
 * Decisions 6.5, by address: for a person without an account (an agent-to-human recipient), or
 * with one (then the account is erased as above).
 */
export async function erasePerson(deps: ErasureDeps, email: string, actor: Actor): Promise<Erasure> {
  const personId = await deps.people.findPerson(email);
  const account = await deps
    .db("accounts")
    .whereNull("erased_at")
    .where((where) => {
      if (personId) where.where("person_id", personId);
      where.orWhere((legacy) =>
        legacy.whereNull("person_id").whereRaw("lower(email) = ?", [normalEmail(email)]),
      );
    })
    .first<{ id: string } | undefined>();
  if (account) return eraseAccount(deps, account.id, actor);
  return erase(deps, { email, personId, accountId: null }, actor);
}

async function erase(deps: ErasureDeps, subject: Subject, actor: Actor): Promise<Erasure> {
  const erasureId = randomUUID();
  // A person whose account predates sealing may since have been sealed as a recipient.
  const personId = subject.personId ?? (subject.email ? await deps.people.findPerson(subject.email) : null);
  const transfers = await namingTransfers(deps.db, personId, subject.email);
  const { position, erasedAt } = await handle(deps, { actor }, async (turn) => {
    const now = turn.at();
    if (subject.accountId) {
      await decideOnAccount(turn, subject.accountId, { type: "EraseAccount", erasureId, now });
      for (const claimStream of claimStreams(subject)) {
        const claims = await turn.load(claimLog, claimStream);
        turn.record(claims, releaseEmail(claims.state, subject.accountId));
      }
    }
    const accountIds = [
      ...new Set([
        ...(subject.accountId ? [subject.accountId] : []),
        ...transfers.flatMap((t) => [t.sender_account_id, t.recipient_account_id]),
      ]),
    ].filter((id): id is string => id !== null);
    const event: ErasureEvent = {
      type: "PersonErased",
      data: {
        erasureId,
        personId,
        erasedAccountId: subject.accountId,
        accountIds,
        transferIds: transfers.map((t) => t.id),
        at: now,
      },
    };
    turn.record({ streamId: streams.erasure(erasureId), expected: NO_STREAM }, [event]);
    return { erasedAt: now };
  });
  // The event first, then the key: should destroying it fail, erasing again finishes the job.
  if (personId) await deps.people.erase(personId);
  if (subject.email) {
    await deps.mailer.forget(subject.email);
    await forgetStoredAnswers(deps.db, deps.serverKey, subject.email, subject.accountId);
  }
  await deps.settle(position);
  // Values written in clear before sealing were overwritten in place: have PostgreSQL drop the old
  // row versions instead of leaving them in its files until autovacuum gets there. Sealed values
  // need nothing of the kind: without the key their old versions are as unreadable as the new.
  const clear = !subject.personId || transfers.some((t) => !t.recipient_person_id && !t.sender_person_id);
  if (clear) await deps.db.raw("vacuum accounts, transfers, history_entries");
  return { erasureId, accountId: subject.accountId, transfers: transfers.length, erasedAt };
}

function claimStreams(subject: Subject): string[] {
  return [
    ...(subject.personId ? [streams.accountEmail(subject.personId)] : []),
    ...(subject.email ? [legacyClaimStream(subject.email)] : []),
  ];
}

interface NamingTransfer {
  id: string;
  sender_account_id: string;
  recipient_account_id: string | null;
  recipient_person_id: string | null;
  sender_person_id: string | null;
}

/**
 * Transfers that show the person (as the human recipient, or the human sender): sealed under their
 * key, or (before sealing) their address in clear.
 */
async function namingTransfers(
  db: Knex,
  personId: string | null,
  email: string | null,
): Promise<NamingTransfer[]> {
  if (!personId && !email) return [];
  return db("transfers")
    .where((where) => {
      if (personId) where.where("recipient_person_id", personId).orWhere("sender_person_id", personId);
      if (email) {
        where.orWhere((legacy) =>
          legacy
            .where({ mode: "agent-to-human" })
            .whereNull("recipient_person_id")
            .whereRaw("lower(recipient) = ?", [normalEmail(email)]),
        );
        where.orWhere((legacy) =>
          legacy
            .where({ mode: "human-to-agent" })
            .whereNull("sender_person_id")
            .whereRaw("lower(sender) = ?", [normalEmail(email)]),
        );
      }
    })
    .orderBy("created_position")
    .select("id", "sender_account_id", "recipient_account_id", "recipient_person_id", "sender_person_id");
}
