/**
 * Runs the decisions on one stream (or on the streams one name guards together, as the books'
 * turn guards every account's quota stream) in this process one after another. Optimistic concurrency
 * still guards the stream against other processes, but writers in this one no longer race each
 * other into conflicts and retries: 32 uploads on one account would otherwise all load, decide
 * and append against the same quota stream, and all but one start over, again and again.
 */
export interface StreamSerializer {
  run<T>(streamId: string, work: () => Promise<T>): Promise<T>;
  /**
   * Takes its turn like `run`, but every item that queued for the stream meanwhile is decided in
   * the same turn: `decideAll` gets them in arrival order and settles each one.
   */
  together<Item, Result>(streamId: string, item: Item, decideAll: DecideAll<Item, Result>): Promise<Result>;
}

export type Outcome<Result> = { ok: true; value: Result } | { ok: false; error: unknown };
export type DecideAll<Item, Result> = (items: Item[]) => Promise<Outcome<Result>[]>;

/**
 * The most items one turn takes: one append carries all their events. A burst of a hundred
 * creates (a hundred people answering request links at once) fits in one turn; at 64 the rest
 * waited for a second turn, behind the projections of the first.
 */
const MAX_TOGETHER = 128;

interface Queued {
  item: unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

export class StreamLock implements StreamSerializer {
  private readonly tails = new Map<string, Promise<unknown>>();
  /** Per stream, the items waiting for a turn that has not started yet. */
  private readonly waiting = new Map<string, Queued[]>();

  run<T>(streamId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(streamId) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => {});
    this.tails.set(streamId, tail);
    void tail.then(() => {
      if (this.tails.get(streamId) === tail) this.tails.delete(streamId);
    });
    return result;
  }

  together<Item, Result>(streamId: string, item: Item, decideAll: DecideAll<Item, Result>): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      const queued: Queued = { item, resolve: resolve as (value: unknown) => void, reject };
      const batch = this.waiting.get(streamId);
      if (batch && batch.length < MAX_TOGETHER) {
        batch.push(queued);
        return;
      }
      const fresh = [queued];
      this.waiting.set(streamId, fresh);
      void this.run(streamId, async () => {
        // The turn has come: whatever joined the batch until now is decided in it.
        if (this.waiting.get(streamId) === fresh) this.waiting.delete(streamId);
        try {
          const outcomes = await decideAll(fresh.map((q) => q.item as Item));
          fresh.forEach((q, index) => {
            const outcome = outcomes[index];
            if (outcome?.ok) q.resolve(outcome.value);
            else q.reject(outcome ? outcome.error : new Error("a queued decision was not settled"));
          });
        } catch (error) {
          for (const q of fresh) q.reject(error);
        }
      });
    });
  }
}
