import type { Knex } from "knex";
import { type AccountState, accountDecider } from "../../../domain/account.js";
import { billingPeriodStart } from "../../../domain/billing.js";
import { DomainError } from "../../../domain/decider.js";
import type { PlanLimits } from "../../../domain/plan-limits.js";
import { limitsOf } from "../../../domain/plans/catalog.js";
import { mayNeedOverdue } from "../../../domain/storage-quota.js";
import { streams } from "../../../domain/streams.js";
import {
  bytesOf,
  releasesStorage,
  type Transfer,
  type TransferCommand,
  type TransferEvent,
  transferDecider,
} from "../../../domain/transfer.js";
import { type UsageEvent, type UsageState, usageDecider } from "../../../domain/usage.js";
import type { BlobStore } from "../../blobs/port.js";
import {
  NO_STREAM,
  type Position,
  type StreamAppend,
  type WrongExpectedVersionError,
} from "../../eventstore/port.js";
import { isTransferId, overdueTransfersOf } from "../../queries/transfers.js";
import type { HotLookups } from "../../read-models/hot-rows.js";
import type { HeldContentKeys } from "../../security/at-rest.js";
import type { CommandDeps } from "../deps.js";
import { handle, type Turn } from "../handle.js";
import type { Outcome } from "../stream-lock.js";
import {
  type Actor,
  accepted,
  loadSnapshotted,
  loadSnapshottedPair,
  type Snapshotted,
  SYSTEM_ACTOR,
  toAppend,
} from "../streams.js";

/**
 * What the transfer commands need beyond the log: the read models (names → ids), file storage and
 * the content keys held for people.
 */
export interface TransferDeps extends CommandDeps {
  db: Knex;
  /** The read-model look-ups every send makes, remembered between the engine's batches. */
  hot: HotLookups;
  blobs: BlobStore;
  heldKeys: HeldContentKeys;
  /**
   * Waits until the read models show everything committed so far (ProjectionEngine.caughtUp), for
   * a command that reads them without the HTTP edge having waited (a send).
   */
  readModelsCaughtUp(): Promise<unknown>;
}

/** The quota stream's snapshot kind: a new shape of UsageState takes a new kind. */
const USAGE_SNAPSHOT = "usage/v2";
/** The account stream's snapshot kind: a new shape of AccountState takes a new kind. */
const ACCOUNT_SNAPSHOT = "account/v2";
/** A transfer's stream, remembered only (it stays short): a new shape of Transfer takes a new kind. */
const TRANSFER_KIND = "transfer/v1";
const transferStream = (transferId: string) => ({
  decider: transferDecider,
  kind: TRANSFER_KIND,
  streamId: streams.transfer(transferId),
  short: true,
});

/** What a new transfer is made of: the CreateTransfer command less the time the handler stamps. */
export type NewTransfer = Omit<Extract<TransferCommand, { type: "CreateTransfer" }>, "type" | "now">;

/** The sending account as a new transfer is decided against it: its plan and its books. */
export interface Sender {
  limits: PlanLimits;
  account: Snapshotted<AccountState>;
  usage: Snapshotted<UsageState>;
}

/**
 * The account's plan and books, whether or not it still exists (its transfers still release),
 * loaded by `loadPair` (a turn's, or the remembered states' outside one).
 */
async function loadBooks(loadPair: Turn["loadSnapshottedPair"], accountId: string): Promise<Sender> {
  const [account, usage] = await loadPair(
    { decider: accountDecider, kind: ACCOUNT_SNAPSHOT, streamId: streams.account(accountId) },
    { decider: usageDecider, kind: USAGE_SNAPSHOT, streamId: streams.usage(accountId) },
  );
  return { limits: limitsOf(account.state.plan), account, usage };
}

async function loadSender(deps: CommandDeps, accountId: string): Promise<Sender> {
  const sender = await loadBooks((first, second) => loadSnapshottedPair(deps, first, second), accountId);
  if (!sender.account.state.exists)
    throw new DomainError("UNAUTHORIZED", "the key's account no longer exists");
  return sender;
}

/**
 * The sender's plan and books, with its overdue transfers expired first when the new transfer
 * could need their storage: storage held by a transfer past its expiry is free at once
 * (decisions 3.14), whether or not the housekeeper has swept it yet, so each is expired here as
 * the housekeeper would. `bytesAtMost` bounds what the new transfer can store (a request's
 * Content-Length, the sizes a presigned create declares; null when unknown): when the storage
 * left already covers it, no expiry can change the decision, and the look-up is skipped.
 */
export async function prepareSender(
  deps: TransferDeps,
  accountId: string,
  bytesAtMost: number | null,
): Promise<Sender> {
  const sender = await loadSender(deps, accountId);
  if (!mayNeedOverdue(sender.usage.state.bytesHeld, sender.limits, bytesAtMost)) return sender;
  const overdue = await overdueTransfersOf(deps.db, accountId, deps.clock.now());
  if (overdue.length === 0) return sender;
  for (const id of overdue) await changeTransfer(deps, id, { type: "ExpireTransfer" }, SYSTEM_ACTOR);
  return loadSender(deps, accountId);
}

/**
 * A transfer's stream as it stands: remembered when current, else read. The signed file links
 * check it on every fetch, so a DELETE or an expiry stops them at once (docs/security.md).
 */
export function loadTransfer(deps: CommandDeps, transferId: string) {
  return loadSnapshotted(deps, transferStream(transferId));
}

/** A transfer as its create decided it, and where the append that recorded it ended. */
export interface Created {
  position: Position;
  transfer: Transfer;
}

/**
 * Records a new transfer and counts it on the sender's quota stream in one atomic append, so the
 * monthly count and the storage limit hold however many uploads race (decisions 3.14). The books
 * are read inside the books' turn: read before it (before an upload, say) they would be stale
 * whenever another upload finished first. Creates that queue for the turn are decided in it
 * together, with the releases that queued beside them, on any account (booksTurn).
 */
export async function createTransfer(deps: TransferDeps, input: NewTransfer, actor: Actor): Promise<Created> {
  const entry: BooksEntry = { kind: "create", input, actor };
  const settled = await takeBooksTurn(deps, input.parties.senderAccountId, entry);
  if (settled.kind !== "created") throw new Error("a create was settled as a release");
  return settled.created;
}

/**
 * What waits for the books' turn to change an account's books (its quota stream): a new transfer
 * to count, or a change of a transfer, decided on the transfer's stream, that frees the storage it
 * held.
 */
type BooksEntry =
  | { kind: "create"; input: NewTransfer; actor: Actor }
  | {
      kind: "release";
      transferId: string;
      bytes: number;
      /** The transfer's own events, at the revision its change was decided on. */
      change: StreamAppend[];
      actor: Actor;
      now: string;
    };
type BooksSettled = { kind: "created"; created: Created } | { kind: "released"; position: Position };

/**
 * The quota streams have one writer per process, the books' turn: every create and every release
 * of storage, on any account, queues for it, and what queued is decided and recorded together.
 * Were releases (a last download with auto_delete, an expiry, a deletion) appended on their own,
 * each would race the creates and the other releases to the stream's next revision; in a one-time
 * transfer's pair the last download meets the create of the next transfer, and all but one writer
 * would start over, again and again. One turn for every account, not one per account: a turn's
 * cost is mostly its own (a load of remembered states, an append), and with a turn per account
 * the same clients spread over four accounts paid three times as many turns (issue 21).
 */
function takeBooksTurn(deps: TransferDeps, accountId: string, entry: BooksEntry): Promise<BooksSettled> {
  return deps.streamLock.together(BOOKS_TURN, { accountId, entry }, (queued) => booksTurn(deps, queued));
}

/** The lock of the books' turn: one for the quota streams of every account. */
const BOOKS_TURN = "books";

/** An entry waiting for the books' turn, and whose books it changes. */
interface Queued {
  accountId: string;
  entry: BooksEntry;
}

/**
 * Decides what queued for the books in order, each against its account's books as the entries
 * before it left them, and records the accepted ones in one append: a busy service pays one load
 * of each account's (remembered) books and one append for a whole queue instead of one each. A
 * refused create is refused alone. A conflict on a quota stream (another process) re-decides
 * them all; one on an entry's own transfer stream settles that entry with the conflict (its
 * command re-reads the transfer and decides again) and records the rest.
 */
async function booksTurn(deps: TransferDeps, queued: Queued[]): Promise<Outcome<BooksSettled>[]> {
  const outcomes: (Outcome<BooksSettled> | undefined)[] = queued.map(() => undefined);
  const onConflict = (error: WrongExpectedVersionError, { recorded }: { recorded: Recorded[] }) => {
    const owner = recorded.find(({ decision }) =>
      decision.appends.some((append) => append.streamId === error.streamId),
    );
    if (owner) outcomes[owner.index] = { ok: false, error };
  };
  const decided = await handle(deps, { onConflict }, async (turn) => {
    const open = queued.flatMap((item, index) => (outcomes[index] ? [] : [{ ...item, index }]));
    const accounts = [...new Set(open.map(({ accountId }) => accountId))];
    const loaded = await Promise.all(
      accounts.map((accountId) => loadBooks((a, b) => turn.loadSnapshottedPair(a, b), accountId)),
    );
    const senders = new Map(accounts.map((accountId, i) => [accountId, loaded[i] as Sender]));
    const books = new Map(accounts.map((accountId, i) => [accountId, (loaded[i] as Sender).usage.state]));
    const now = turn.at();
    const refused: { index: number; error: DomainError }[] = [];
    const recorded: Recorded[] = [];
    for (const { accountId, entry, index } of open) {
      const sender = senders.get(accountId) as Sender;
      const before = books.get(accountId) as UsageState;
      try {
        const decision = decideEntry(entry, before, {
          limits: sender.limits,
          account: sender.account.state,
          now,
        });
        books.set(accountId, decision.books.reduce(usageDecider.evolve, before));
        recorded.push({ index, entry, decision, usage: sender.usage });
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        refused.push({ index, error });
      }
    }
    for (const { decision } of recorded) for (const append of decision.appends) turn.include(append);
    for (const { entry, decision, usage } of recorded)
      turn.record(usage, decision.books, entry.actor, decision.now);
    return { refused, recorded };
  });
  const position = decided.position ?? "";
  for (const { index, error } of decided.refused) outcomes[index] = { ok: false, error };
  for (const { index, decision, usage } of decided.recorded) {
    const { created } = decision;
    if (created) {
      const { append, transfer } = created;
      const revision = append.events.length - 1;
      await deps.snapshots.keep(append.streamId, TRANSFER_KIND, { revision, state: transfer }, usage.mark, {
        stored: false,
      });
    }
    outcomes[index] = {
      ok: true,
      value: created
        ? { kind: "created", created: { position, transfer: created.transfer } }
        : { kind: "released", position },
    };
  }
  return outcomes.map(
    (outcome) => outcome ?? { ok: false, error: new Error("a queued entry was not settled") },
  );
}

/** An entry its turn accepted, what was decided for it, and the books it was decided against. */
interface Recorded {
  index: number;
  entry: BooksEntry;
  decision: EntryDecision;
  usage: Snapshotted<UsageState>;
}

/** One entry as its turn decides it: its stream's events, its change of the books, and when. */
interface EntryDecision {
  appends: StreamAppend[];
  books: UsageEvent[];
  /** A create's new transfer, and the append that records it. */
  created: { append: StreamAppend; transfer: Transfer } | null;
  now: string;
}

/** One entry as its turn decides it, against the books as the entries before it left them. */
function decideEntry(
  entry: BooksEntry,
  books: UsageState,
  turn: { limits: PlanLimits; account: AccountState; now: string },
): EntryDecision {
  if (entry.kind === "release") {
    const released = accepted(
      usageDecider.decide(
        { type: "ReleaseStorage", transferId: entry.transferId, bytes: entry.bytes },
        books,
        { limits: NO_LIMITS },
      ),
    );
    return { appends: entry.change, books: released, created: null, now: entry.now };
  }
  if (!turn.account.exists) throw new DomainError("UNAUTHORIZED", "the key's account no longer exists");
  const { created, counts } = decideCreate(entry.input, books, {
    limits: turn.limits,
    accountCreatedAt: turn.account.createdAt,
    now: turn.now,
  });
  const append = toAppend(
    { streamId: streams.transfer(entry.input.transferId), expected: NO_STREAM },
    created,
    entry.actor,
    turn.now,
  );
  return { appends: [append], books: counts, created: { append, transfer: decided(created) }, now: turn.now };
}

/**
 * One create as its turn decides it: the transfer's events, and its count on the sender's books
 * as the creates before it in the turn left them. Throws the refusal of either decider.
 */
function decideCreate(
  input: NewTransfer,
  books: UsageState,
  { limits, accountCreatedAt, now }: { limits: PlanLimits; accountCreatedAt: string; now: string },
): { created: TransferEvent[]; counts: UsageEvent[] } {
  const created = accepted(
    transferDecider.decide({ type: "CreateTransfer", ...input, now }, transferDecider.initialState(), {
      limits,
    }),
  );
  const counts = accepted(
    usageDecider.decide(
      {
        type: "CountTransfer",
        transferId: input.transferId,
        period: billingPeriodStart(accountCreatedAt, now),
        bytes: bytesOf(input.files),
        // Spec section 8: sends to people without an account are limited per UTC day.
        inviteDay: input.human && !input.human.registered ? now.slice(0, 10) : null,
        expiresAt: input.terms.expiresAt,
      },
      books,
      { limits },
    ),
  );
  return { created, counts };
}

/** A change command without its time, which the handler stamps from the service clock. */
export type TransferChange =
  Exclude<TransferCommand, { type: "CreateTransfer" }> extends infer C
    ? C extends unknown
      ? Omit<C, "now">
      : never
    : never;

/**
 * Any later change of a transfer (confirm, download, expiry, deletion, purge). Storage the change
 * frees is released on the sender's quota stream in the same append, in the books' turn. Many attempts are allowed:
 * parallel downloads of one transfer all contend for its stream, and each must be counted once.
 * `prepare` runs before each decision with the transfer as it stands (a confirm looks at the
 * stored files) and gives what the command needs from outside the log; `alongside` decides on
 * another stream in the same append.
 */
export async function changeTransfer<C extends TransferChange>(
  deps: TransferDeps,
  transferId: string,
  change: C | ((transfer: Transfer) => Promise<C>),
  actor: Actor,
  alongside?: Alongside,
): Promise<{ position: Position | null; transfer: Transfer }> {
  if (!isTransferId(transferId)) throw new DomainError("NOT_FOUND", "no such transfer");
  const handling = { actor, lock: streams.transfer(transferId), attempts: 200 };
  return handle(deps, handling, async (turn) => {
    const loaded = await turn.loadSnapshotted(transferStream(transferId));
    const before = loaded.state;
    if (before.status === "none") throw new DomainError("NOT_FOUND", "no such transfer");
    const command = typeof change === "function" ? await change(before) : change;
    const now = turn.at();
    const events = turn.decide(transferDecider, loaded, { ...command, now } as TransferCommand, undefined);
    const after = events.reduce(transferDecider.evolve, before) as Transfer;
    await alongside?.(turn, after);
    if (releasesStorage(before, events)) {
      turn.commitThrough((appends) => releaseStorage(deps, before, appends, actor, now));
    }
    return { transfer: after };
  });
}

/**
 * A decision on another stream that goes in the same atomic append as a transfer's change, given
 * the transfer as the change leaves it (a request link counts a use as its transfer is confirmed).
 */
export type Alongside = (turn: Turn, after: Transfer) => Promise<void>;

/** Records a change that frees the transfer's storage on its sender's books, in the books' turn (booksTurn). */
async function releaseStorage(
  deps: TransferDeps,
  before: Transfer,
  change: StreamAppend[],
  actor: Actor,
  now: string,
): Promise<Position> {
  const { transferId, senderAccountId } = before.record;
  const entry: BooksEntry = {
    kind: "release",
    transferId,
    bytes: bytesOf(before.record.files),
    change,
    actor,
    now,
  };
  const settled = await takeBooksTurn(deps, senderAccountId, entry);
  if (settled.kind !== "released") throw new Error("a release was settled as a create");
  return settled.position;
}

// Releasing storage is never refused, whatever the plan.
const NO_LIMITS = limitsOf("enterprise");

function decided(events: TransferEvent[]): Transfer {
  const state = events.reduce(transferDecider.evolve, transferDecider.initialState());
  if (state.status === "none") throw new Error("a created transfer has no state");
  return state;
}
