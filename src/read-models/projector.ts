import type { Knex } from "knex";
import type { Projection } from "../../projections/projection.js";
import type { EventStore, Position, RecordedEvent, Subscription } from "../eventstore/port.js";

/** Another process moved this projection's checkpoint (a rebuild, or a second instance). */
class CheckpointMoved extends Error {}

/**
 * Runs one projection as a checkpointed catch-up subscription. Each batch changes the read model
 * and moves the checkpoint in one transaction, with a compare-and-set on the checkpoint, so a crash
 * never applies an event twice or skips one, and two instances never apply the same batch.
 */
export class Projector {
  private subscription: Subscription | null = null;
  private applied: Position | null = null;
  private listeners = new Set<() => void>();
  private stopped = true;

  constructor(
    readonly projection: Projection,
    private readonly store: EventStore,
    private readonly db: Knex,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** The last position whose events this projection has applied. */
  get position(): Position | null {
    return this.applied;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.subscribeFromCheckpoint();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.subscription?.stop();
    this.subscription = null;
  }

  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Applies one batch after `from`; throws CheckpointMoved when the stored checkpoint is elsewhere. */
  async applyBatch(from: Position | null, batch: RecordedEvent[]): Promise<void> {
    const last = batch[batch.length - 1];
    if (!last) return;
    const { name } = this.projection;
    await this.db.transaction(async (trx) => {
      await trx.raw(
        "insert into projection_checkpoints (name, position) values (?, null) on conflict do nothing",
        [name],
      );
      const row = await trx("projection_checkpoints")
        .where({ name })
        .forUpdate()
        .first<{ position: string | null }>();
      if ((row?.position ?? null) !== from) throw new CheckpointMoved(`checkpoint of ${name} moved`);
      for (const event of batch) await this.projection.apply(trx, event);
      await trx("projection_checkpoints").where({ name }).update({ position: last.position });
    });
    this.advanceTo(last.position);
  }

  private advanceTo(position: Position): void {
    this.applied = position;
    for (const listener of this.listeners) listener();
  }

  private async subscribeFromCheckpoint(): Promise<void> {
    const from = await readCheckpoint(this.db, this.projection.name);
    if (this.stopped) return;
    this.applied = from;
    let cursor = from;
    this.subscription = this.store.subscribe({
      from,
      handle: async (batch) => {
        await this.applyBatch(cursor, batch);
        cursor = batch[batch.length - 1]?.position ?? cursor;
      },
      onError: (error) => {
        if (error instanceof CheckpointMoved) {
          void this.restart();
          return;
        }
        this.onError(error);
      },
    });
  }

  private async restart(): Promise<void> {
    await this.subscription?.stop();
    if (!this.stopped) await this.subscribeFromCheckpoint();
  }
}

export async function readCheckpoint(db: Knex, name: string): Promise<Position | null> {
  const row = await db("projection_checkpoints")
    .where({ name })
    .first<{ position: string | null } | undefined>();
  return row?.position ?? null;
}
