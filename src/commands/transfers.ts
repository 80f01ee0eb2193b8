import { accountDecider } from "../../domain/account.js";
import { billingPeriodStart } from "../../domain/billing.js";
import { streams } from "../../domain/streams.js";
import {
  releasesStorage,
  type TransferCommand,
  type TransferState,
  transferDecider,
} from "../../domain/transfer.js";
import { storageInUse, usageDecider } from "../../domain/usage.js";
import { NO_STREAM, type StreamAppend } from "../eventstore/port.js";
import { limitsOf } from "../plans/catalog.js";
import type { CommandDeps } from "./deps.js";
import { type Actor, accepted, appendAll, load, retryOnConflict, toAppend } from "./streams.js";

/** What a new transfer is made of: the CreateTransfer command less the time the handler stamps. */
export type NewTransfer = Omit<Extract<TransferCommand, { type: "CreateTransfer" }>, "type" | "now">;

/**
 * Records a new transfer and counts it on the sender's quota stream in one atomic append, so the
 * monthly count and the storage limit hold however many uploads race (decisions 3.14).
 */
export async function createTransfer(deps: CommandDeps, input: NewTransfer, actor: Actor) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const accountId = input.parties.senderAccountId;
    const account = await load(deps.store, accountDecider, streams.account(accountId));
    const usage = await load(deps.store, usageDecider, streams.usage(accountId));
    const bytes = input.files.reduce((sum, file) => sum + file.size, 0);
    const counted = accepted(
      usageDecider.decide(
        {
          type: "CountTransfer",
          transferId: input.transferId,
          period: billingPeriodStart(account.state.createdAt, now),
          bytes,
          // Spec section 8: sends to people without an account are limited per UTC day.
          inviteDay: input.human && !input.human.registered ? now.slice(0, 10) : null,
          expiresAt: input.terms.expiresAt,
          now,
        },
        usage.state,
        { limits: limitsOf(account.state.plan) },
      ),
    );
    const created = accepted(
      transferDecider.decide(
        { type: "CreateTransfer", ...input, now },
        transferDecider.initialState(),
        undefined,
      ),
    );
    const position = await appendAll(deps.store, [
      toAppend({ streamId: streams.transfer(input.transferId), expected: NO_STREAM }, created, actor, now),
      toAppend(usage, counted, actor, now),
    ]);
    return { position };
  });
}

/** A change command without its time, which the handler stamps from the service clock. */
type TransferChange =
  Exclude<TransferCommand, { type: "CreateTransfer" }> extends infer C
    ? C extends unknown
      ? Omit<C, "now">
      : never
    : never;

/**
 * Any later change of a transfer (confirm, download, expiry, deletion, purge). Storage the change
 * frees is released on the sender's quota stream in the same append. Many attempts are allowed:
 * parallel downloads of one transfer all contend for its stream, and each must be counted once.
 */
export async function changeTransfer(
  deps: CommandDeps,
  transferId: string,
  change: TransferChange,
  actor: Actor,
) {
  return retryOnConflict(async () => {
    const now = deps.clock.now().toISOString();
    const transfer = await load(deps.store, transferDecider, streams.transfer(transferId));
    const events = accepted(
      transferDecider.decide({ ...change, now } as TransferCommand, transfer.state, undefined),
    );
    const appends: StreamAppend[] = [toAppend(transfer, events, actor, now)];
    if (releasesStorage(transfer.state, events)) {
      const usage = await load(deps.store, usageDecider, streams.usage(transfer.state.senderAccountId));
      const released = accepted(
        usageDecider.decide({ type: "ReleaseStorage", transferId }, usage.state, { limits: NO_LIMITS }),
      );
      appends.push(toAppend(usage, released, actor, now));
    }
    const position = await appendAll(deps.store, appends);
    const state: TransferState = events.reduce(transferDecider.evolve, transfer.state);
    return { position, state };
  }, 200);
}

// Releasing storage is never refused, whatever the plan.
const NO_LIMITS = limitsOf("enterprise");

/** Bytes of the account's storage in use now, from its quota stream (expired transfers excluded). */
export async function storageInUseNow(deps: CommandDeps, accountId: string): Promise<number> {
  const usage = await load(deps.store, usageDecider, streams.usage(accountId));
  return storageInUse(usage.state, deps.clock.now().toISOString());
}
