import type { Knex } from "knex";
import type { EventStore, Position, RecordedEvent, Subscription } from "../eventstore/port.js";

/**
 * Runs a side effect (an e-mail) once per event, from a checkpoint kept beside the projections'.
 * Unlike a projection it is never rebuilt, and it starts at the head of the log the first time it
 * runs, so history is never acted on twice. Delivery is at least once: a crash after the effect and
 * before the checkpoint repeats that one effect.
 */
export class Reactor {
  private subscription: Subscription | null = null;

  constructor(
    private readonly name: string,
    private readonly store: EventStore,
    private readonly db: Knex,
    private readonly react: (event: RecordedEvent) => Promise<void>,
    private readonly onError: (error: unknown) => void,
  ) {}

  private get checkpointName(): string {
    return `reactor:${this.name}`;
  }

  async start(): Promise<void> {
    const from = await this.checkpoint();
    this.subscription = this.store.subscribe({
      from,
      handle: async (batch) => {
        for (const event of batch) await this.react(event);
        const last = batch[batch.length - 1];
        if (last)
          await this.db("projection_checkpoints")
            .where({ name: this.checkpointName })
            .update({ position: last.position });
      },
      onError: this.onError,
    });
  }

  async stop(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = null;
  }

  private async checkpoint(): Promise<Position | null> {
    const name = this.checkpointName;
    const head = await this.store.headPosition();
    await this.db.raw(
      "insert into projection_checkpoints (name, position) values (?, ?) on conflict do nothing",
      [name, head],
    );
    const row = await this.db("projection_checkpoints").where({ name }).first<{ position: string | null }>();
    return row?.position ?? null;
  }
}
