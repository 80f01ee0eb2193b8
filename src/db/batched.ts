import type { Knex } from "knex";
import { statementsAtOnce } from "./database.js";

interface Waiting<In, Out> {
  input: In;
  resolve(output: Out): void;
  reject(error: unknown): void;
}

/** At most this many calls go into one statement. */
const MOST_PER_BATCH = 128;

/**
 * Batched look-ups: calls made while `inFlight` statements of this kind are running wait for one to
 * end, then go together in the next one. A lone call runs at once, as a plain query would; a
 * hundred requests that each look up one row (a link by its token, a stream's events) cost a few
 * statements instead of a hundred. On the embedded database, which runs one statement at a time,
 * that is the difference between a hundred round trips through its thread and a few. The group
 * commit (eventstore/group-commit.ts) does the same for appends.
 *
 * `run` answers every input of a batch, in order, in one statement; a batch that fails fails for
 * each of its calls, as the one statement it is.
 */
export class Batched<In, Out> {
  private readonly queue: Waiting<In, Out>[] = [];
  private running = 0;

  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    private readonly inFlight: number,
  ) {}

  call(input: In): Promise<Out> {
    return new Promise((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.start();
    });
  }

  /** Several calls queued together, so that they go in the same statement (up to its size). */
  callAll(inputs: In[]): Promise<Out[]> {
    const answers = inputs.map(
      (input) => new Promise<Out>((resolve, reject) => this.queue.push({ input, resolve, reject })),
    );
    this.start();
    return Promise.all(answers);
  }

  private start(): void {
    while (this.running < this.inFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, MOST_PER_BATCH);
      this.running++;
      void this.settle(batch).finally(() => {
        this.running--;
        this.start();
      });
    }
  }

  private async settle(batch: Waiting<In, Out>[]): Promise<void> {
    try {
      const outputs = await this.run(batch.map((waiting) => waiting.input));
      for (const [i, waiting] of batch.entries()) waiting.resolve(outputs[i] as Out);
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}

/**
 * One Batched per database for a look-up written once at module level: as many of its statements
 * at once as the database runs (statementsAtOnce).
 */
export function batchedPerDatabase<In, Out>(
  run: (db: Knex, inputs: In[]) => Promise<Out[]>,
): (db: Knex) => Batched<In, Out> {
  const made = new WeakMap<Knex, Batched<In, Out>>();
  return (db) => {
    let batched = made.get(db);
    if (!batched) {
      batched = new Batched((inputs) => run(db, inputs), statementsAtOnce(db));
      made.set(db, batched);
    }
    return batched;
  };
}
