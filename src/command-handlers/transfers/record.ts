import type { Knex } from "knex";
import { type AccountState, accountDecider } from "../../../domain/account.js";
import { billingPeriodStart } from "../../../domain/billing.js";
import { DomainError } from "../../../domain/decider.js";
import type { PlanLimits } from "../../../domain/plan-limits.js";
import { streams } from "../../../domain/streams.js";
import {
  bytesOf,
  releasesStorage,
  type Transfer,
  type TransferCommand,
  type TransferEvent,
  transferDecider,
} from "../../../domain/transfer.js";
import { storageLeft, type UsageEvent, type UsageState, usageDecider } from "../../../domain/usage.js";
import type { BlobStore } from "../../blobs/port.js";
import { NO_STREAM, type Position, type StreamAppend } from "../../eventstore/port.js";
import { limitsOf } from "../../plans/catalog.js";
import { isTransferId, overdueTransfersOf } from "../../queries/transfers.js";
import type { HotLookups } from "../../read-models/hot-rows.js";
import type { HeldContentKeys } from "../../security/at-rest.js";
import type { CommandDeps } from "../deps.js";
import type { Outcome } from "../stream-lock.js";
import {
  type Actor,
  accepted,
  appendAll,
  keepSnapshot,
  loadSnapshotted,
  loadSnapshottedPair,
  retryOnConflict,
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

async function loadSender(deps: CommandDeps, accountId: string): Promise<Sender> {
  const [account, usage] = await loadSnapshottedPair(
    deps,
    { decider: accountDecider, kind: ACCOUNT_SNAPSHOT, streamId: streams.account(accountId) },
    { decider: usageDecider, kind: USAGE_SNAPSHOT, streamId: streams.usage(accountId) },
  );
  if (!account.state.exists) throw new DomainError("UNAUTHORIZED", "the key's account no longer exists");
  return { limits: limitsOf(account.state.plan), account, usage };
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
  const left = storageLeft(sender.usage.state, sender.limits);
  if (left === null || sender.usage.state.bytesHeld === 0) return sender;
  if (bytesAtMost !== null && bytesAtMost <= left) return sender;
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
 * are read inside the stream's turn: read before it (before an upload, say) they would be stale
 * whenever another upload finished first. Creates that queue for the turn are decided in it
 * together (createTogether).
 */
export function createTransfer(deps: TransferDeps, input: NewTransfer, actor: Actor): Promise<Created> {
  return deps.streamLock.together(streams.usage(input.parties.senderAccountId), { input, actor }, (queued) =>
    createTogether(deps, queued),
  );
}

/**
 * Decides the creates that queued on one sender's quota stream in order, each against the books
 * as the ones before it left them, and records the accepted ones in one append: a busy account
 * pays one load and one append for a whole queue of uploads instead of one each. A refused create
 * is refused alone; a conflict with another process re-decides them all.
 */
async function createTogether(
  deps: TransferDeps,
  queued: { input: NewTransfer; actor: Actor }[],
): Promise<Outcome<Created>[]> {
  const accountId = queued[0]?.input.parties.senderAccountId;
  if (!accountId) return [];
  return retryOnConflict(async () => {
    const { limits, account, usage } = await loadSender(deps, accountId);
    const now = deps.clock.now().toISOString();
    let books = usage.state;
    const decisions: (Transfer | DomainError)[] = [];
    const transferAppends: StreamAppend[] = [];
    const counted: UsageEvent[] = [];
    const countedToStore: StreamAppend["events"] = [];
    const createdTransfers: { transferId: string; revision: number; state: Transfer }[] = [];
    for (const { input, actor } of queued) {
      try {
        const { created, counts } = decideCreate(input, books, {
          limits,
          accountCreatedAt: account.state.createdAt,
          now,
        });
        books = counts.reduce(usageDecider.evolve, books);
        counted.push(...counts);
        countedToStore.push(...toAppend(usage, counts, actor, now).events);
        transferAppends.push(
          toAppend(
            { streamId: streams.transfer(input.transferId), expected: NO_STREAM },
            created,
            actor,
            now,
          ),
        );
        const transfer = decided(created);
        createdTransfers.push({
          transferId: input.transferId,
          revision: created.length - 1,
          state: transfer,
        });
        decisions.push(transfer);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        decisions.push(error);
      }
    }
    const position =
      transferAppends.length === 0
        ? null
        : await appendAll(deps.store, [
            ...transferAppends,
            { streamId: usage.streamId, expected: usage.expected, events: countedToStore },
          ]);
    await keepSnapshot(deps, usageDecider, usage, counted);
    for (const { transferId, revision, state } of createdTransfers) {
      await deps.snapshots.keep(
        streams.transfer(transferId),
        TRANSFER_KIND,
        { revision, state },
        usage.mark,
        {
          stored: false,
        },
      );
    }
    return decisions.map((d) =>
      d instanceof DomainError
        ? { ok: false, error: d }
        : { ok: true, value: { position: position ?? "", transfer: d } },
    );
  });
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
 * frees is released on the sender's quota stream in the same append. Many attempts are allowed:
 * parallel downloads of one transfer all contend for its stream, and each must be counted once.
 * `prepare` runs before each decision with the transfer as it stands (a confirm looks at the
 * stored files) and gives what the command needs from outside the log.
 */
export async function changeTransfer<C extends TransferChange>(
  deps: TransferDeps,
  transferId: string,
  change: C | ((transfer: Transfer) => Promise<C>),
  actor: Actor,
): Promise<{ position: Position | null; transfer: Transfer }> {
  if (!isTransferId(transferId)) throw new DomainError("NOT_FOUND", "no such transfer");
  return deps.streamLock.run(streams.transfer(transferId), () =>
    retryOnConflict(async () => {
      const loaded = await loadSnapshotted(deps, transferStream(transferId));
      const before = loaded.state;
      if (before.status === "none") throw new DomainError("NOT_FOUND", "no such transfer");
      const command = typeof change === "function" ? await change(before) : change;
      const now = deps.clock.now().toISOString();
      const events = accepted(
        transferDecider.decide({ ...command, now } as TransferCommand, before, undefined),
      );
      const appends: StreamAppend[] = [toAppend(loaded, events, actor, now)];
      const accountId = before.record.senderAccountId;
      let usage: Snapshotted<UsageState> | null = null;
      let released: UsageEvent[] = [];
      if (releasesStorage(before, events)) {
        usage = await loadSnapshotted(deps, {
          decider: usageDecider,
          kind: USAGE_SNAPSHOT,
          streamId: streams.usage(accountId),
        });
        released = accepted(
          usageDecider.decide(
            { type: "ReleaseStorage", transferId, bytes: bytesOf(before.record.files) },
            usage.state,
            { limits: NO_LIMITS },
          ),
        );
        appends.push(toAppend(usage, released, actor, now));
      }
      const position = await appendAll(deps.store, appends);
      await keepSnapshot(deps, transferDecider, loaded, events);
      if (usage) await keepSnapshot(deps, usageDecider, usage, released);
      return { position, transfer: events.reduce(transferDecider.evolve, before) as Transfer };
    }, 200),
  );
}

// Releasing storage is never refused, whatever the plan.
const NO_LIMITS = limitsOf("enterprise");

function decided(events: TransferEvent[]): Transfer {
  const state = events.reduce(transferDecider.evolve, transferDecider.initialState());
  if (state.status === "none") throw new Error("a created transfer has no state");
  return state;
}
