import type { Knex } from "knex";
import type { EventStore, Position, RecordedEvent, Subscription } from "../eventstore/port.js";

/** Events passed over before the checkpoint of a reactor that did nothing moves anyway. */
const SAVE_EVERY = 1000;
/**
 * By default a reactor reads the appends of this long at once. An e-mail a tenth of a second later
 * goes unnoticed; reading as often as the projections do cost a read per request under load, most
 * of them empty while a projection batch's transaction held the log's readers back.
 */
const DEFAULT_READ_INTERVAL_MS = 100;

/** A reactor's step from a step per event (an e-mail each): true when any of them acted. */
export function oneByOne(react: (event: RecordedEvent) => Promise<boolean>) {
  return async (batch: RecordedEvent[]): Promise<boolean> => {
    let acted = false;
    for (const event of batch) acted = (await react(event)) || acted;
    return acted;
  };
}

/** How a reactor reads the log. */
export interface ReactorReading {
  /**
   * How long a batch gathers appends under load (DEFAULT_READ_INTERVAL_MS): what its effect may lag
   * behind them. A function is asked before each wait.
   */
  intervalMs?: number | (() => number);
  /** The only event types it acts on: the others are passed over unread (SubscribeOptions.types). */
  types?: readonly string[];
}

/**
 * Runs a side effect (an e-mail) once per event, from a checkpoint kept beside the projections'.
 * Unlike a projection it is never rebuilt, and it starts at the head of the log the first time it
 * runs, so history is never acted on twice. Delivery is at least once: a crash after the effect and
 * before the checkpoint repeats that one effect. The checkpoint moves after a batch it acted on,
 * or every SAVE_EVERY events read (of its types or not): batches with nothing to do cost no write.
 */
export class Reactor {
  private subscription: Subscription | null = null;

  constructor(
    private readonly name: string,
    private readonly store: EventStore,
    private readonly db: Knex,
    /** Acts on a batch of events, in log order; true when it did something (see `oneByOne`). */
    private readonly react: (batch: RecordedEvent[]) => Promise<boolean>,
    private readonly onError: (error: unknown) => void,
    private readonly reading: ReactorReading = {},
  ) {}

  private get checkpointName(): string {
    return `reactor:${this.name}`;
  }

  async start(): Promise<void> {
    const from = await this.checkpoint();
    let unsaved = 0;
    let acted = false;
    this.subscription = this.store.subscribe({
      from,
      readIntervalMs: this.reading.intervalMs ?? DEFAULT_READ_INTERVAL_MS,
      ...(this.reading.types ? { types: this.reading.types } : {}),
      handle: async (batch) => {
        acted = (await this.react(batch)) || acted;
      },
      // The checkpoint goes as far as the log was read, past the events of other types too.
      read: async (to, events) => {
        unsaved += events;
        if (acted || unsaved >= SAVE_EVERY) {
          await this.db("projection_checkpoints")
            .where({ name: this.checkpointName })
            .update({ position: to });
          unsaved = 0;
          acted = false;
        }
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
