import { randomUUID } from "node:crypto";
import pg from "pg";
import type { AppendSignal } from "./catch-up.js";

/** The channel every append on PostgreSQL notifies, so subscribers of every instance wake at once. */
export const APPEND_CHANNEL = "handoff_events";
const RECONNECT_MS = 1000;

/**
 * LISTENs on its own connection and wakes `signal` on each append by another process (each append
 * names its instance in the notification; this process's own appends wake it directly). A lost
 * connection is re-opened; meanwhile subscribers fall back to their idle poll, so nothing is
 * missed, only later.
 */
export class AppendListener {
  /** Names this process in the notifications of its appends. */
  readonly instanceId = randomUUID();
  private client: pg.Client | null = null;
  private stopped = false;
  /** Moves with every other process's append heard, and with every (re)connection: appends made while no one listened went unheard. */
  private heard = 0;

  /** EventStore.foreignAppends: null while not listening. */
  foreignAppends(): number | null {
    return this.client ? this.heard : null;
  }
  private retry: NodeJS.Timeout | null = null;

  constructor(
    private readonly url: string,
    private readonly signal: AppendSignal,
  ) {}

  async start(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on("notification", ({ payload }) => {
      if (payload === this.instanceId) return;
      this.heard++;
      this.signal.notify();
    });
    client.on("error", () => this.reconnect(client));
    client.on("end", () => this.reconnect(client));
    try {
      await client.connect();
      await client.query(`listen ${APPEND_CHANNEL}`);
      this.heard++;
      this.client = client;
      // Appends made while no one listened are found now rather than at the next idle poll.
      this.signal.notify();
    } catch {
      this.reconnect(client);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private reconnect(client: pg.Client): void {
    if (this.stopped || this.retry) return;
    if (this.client === client) this.client = null;
    client.removeAllListeners();
    client.end().catch(() => {});
    this.retry = setTimeout(() => {
      this.retry = null;
      if (!this.stopped) void this.start();
    }, RECONNECT_MS);
  }
}
