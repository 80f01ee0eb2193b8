import { blobKey } from "../blobs/keys.js";
import { SYSTEM_ACTOR } from "../command-handlers/streams.js";
import { activateHeld } from "../command-handlers/transfers/activate.js";
import { changeTransfer, type TransferDeps } from "../command-handlers/transfers/record.js";
import { pruneIdempotencyRecords } from "../db/stored-answers.js";
import { AppendSignal } from "../eventstore/catch-up.js";
import { findPerson, heldTransfersNowReceivable } from "../queries/humans.js";
import { dueForExpiry, dueForPurge } from "../queries/transfers.js";
import { type LeftoversSwept, sweepLeftovers } from "./leftovers.js";

const SWEEP_INTERVAL_MS = 1000;
const BATCH = 100;
const PRUNE_INTERVAL_MS = 60_000;
/** Crash leftovers are looked for at start-up, then this often (real time: file times are real). */
const LEFTOVER_INTERVAL_MS = 60_000;

/**
 * Moves transfers to `expired` at `expires_at` and deletes file data (and any content key held for a
 * person) that is due to go (expired, deleted, or downloaded out with auto_delete), activates held
 * transfers whose person has a receiving key by now, Idempotency-Key records past their 24 hours, and
 * what a crash left in the blob store (at start-up, then every minute). It works from the read models, which the log keeps
 * durable, so a restart loses no pending expiry; the deciders make a repeat of either step a no-op,
 * so several instances may sweep at once.
 */
export class Housekeeper {
  private readonly wakeUp = new AppendSignal();
  private running = false;
  private loop: Promise<void> | null = null;
  private prunedAt = Number.NEGATIVE_INFINITY;
  private readonly startedAtMs = Date.now();
  private leftoversAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly deps: TransferDeps,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.wakeUp.notify();
    await this.loop;
  }

  /** Sweep now rather than at the next tick (the test clock moved). */
  wake(): void {
    this.wakeUp.notify();
  }

  /** One pass: expire what is due, then purge what is due. Returns how much it did. */
  async sweep(): Promise<{ expired: number; purged: number }> {
    const now = this.deps.clock.now();
    const expiring = await dueForExpiry(this.deps.db, now, BATCH);
    for (const id of expiring) await changeTransfer(this.deps, id, { type: "ExpireTransfer" }, SYSTEM_ACTOR);
    const purging = await dueForPurge(this.deps.db, this.deps.clock.now(), BATCH);
    for (const transfer of purging) {
      await this.deps.blobs.delete(transfer.files.map((file) => blobKey(transfer.id, file.fileId)));
      await this.deps.heldKeys.destroy([transfer.id]);
      await changeTransfer(this.deps, transfer.id, { type: "MarkFilesDeleted" }, SYSTEM_ACTOR);
    }
    await this.activateMissed();
    await this.pruneIdempotencyRecords();
    return { expired: expiring.length, purged: purging.length };
  }

  /**
   * Held transfers whose person has a receiving key by now: one created while the key was being
   * set, or one whose activation failed, is activated here as setting the key would have.
   */
  private async activateMissed(): Promise<void> {
    const missed = await heldTransfersNowReceivable(this.deps.db, this.deps.clock.now(), BATCH);
    for (const { id, account_id: accountId } of missed) {
      const person = await findPerson(this.deps.db, this.deps.people, accountId);
      if (!person?.receiving_key) continue;
      await activateHeld(
        this.deps,
        id,
        { accountId, email: person.email, receivingKey: person.receiving_key },
        SYSTEM_ACTOR,
      ).catch(this.onError);
    }
  }

  /** At most once per PRUNE_INTERVAL_MS: the records are many and nothing waits on them. */
  private async pruneIdempotencyRecords(): Promise<void> {
    const now = this.deps.clock.now();
    if (now.getTime() - this.prunedAt < PRUNE_INTERVAL_MS) return;
    this.prunedAt = now.getTime();
    await pruneIdempotencyRecords(this.deps.db, now);
  }

  /** Removes what a crash left in the blob store (src/housekeeping/leftovers.ts). */
  sweepLeftovers(): Promise<LeftoversSwept> {
    this.leftoversAt = Date.now();
    return sweepLeftovers(this.deps.store, this.deps.blobs, this.startedAtMs, this.leftoversAt);
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        if (Date.now() - this.leftoversAt >= LEFTOVER_INTERVAL_MS) await this.sweepLeftovers();
        const { expired, purged } = await this.sweep();
        // A full batch means more is waiting: go again at once.
        if (expired === BATCH || purged === BATCH) continue;
      } catch (error) {
        this.onError(error);
      }
      if (this.running) await this.wakeUp.wait(SWEEP_INTERVAL_MS);
    }
  }
}
