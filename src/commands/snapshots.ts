import type { Knex } from "knex";

export interface Snapshot<State> {
  revision: number;
  state: State;
}

/** How many events may follow the stored snapshot before a newer state is stored. */
const SNAPSHOT_EVERY = 50;
/** How many streams' latest states a process keeps in memory (the least recently used go first). */
const REMEMBERED_STREAMS = 10_000;

interface Remembered {
  kind: string;
  snapshot: Snapshot<unknown>;
  /** The revision of the snapshot stored in the table, as far as this process knows. */
  stored: number;
}

/**
 * Folded states of streams that grow with use: the latest state this process folded of each, in
 * memory, and every SNAPSHOT_EVERY events one stored in the read-model database (so a restarted
 * or second process folds little). Both are caches of the log: a missing or stale snapshot only
 * costs a longer fold, and a command still reads the events after it, so another process's
 * appends are never missed. `kind` names the state's shape; a snapshot of another kind (an older
 * shape) is ignored.
 *
 * The memory layer is what keeps a create cheap: an account's creates take turns on its quota
 * stream, and each would otherwise read the snapshot row before the events after it.
 */
export class SnapshotStore {
  private readonly latest = new Map<string, Remembered>();

  constructor(private readonly db: Knex) {}

  async read<State>(streamId: string, kind: string): Promise<Snapshot<State> | null> {
    const remembered = this.latest.get(streamId);
    if (remembered?.kind === kind) return remembered.snapshot as Snapshot<State>;
    const row = await this.db("aggregate_snapshots")
      .where({ stream_id: streamId, kind })
      .first<{ revision: number | string; state: State } | undefined>();
    if (!row) return null;
    const snapshot = { revision: Number(row.revision), state: row.state };
    this.remember(streamId, { kind, snapshot, stored: snapshot.revision });
    return snapshot;
  }

  /**
   * Keeps a stream's state at a revision: in memory for the next command, and in the table once
   * SNAPSHOT_EVERY events have followed the stored one. A failed write costs nothing but a longer
   * fold for the next process to load the stream.
   */
  async keep<State>(streamId: string, kind: string, snapshot: Snapshot<State>): Promise<void> {
    const remembered = this.latest.get(streamId);
    const known = remembered?.kind === kind ? remembered : null;
    if (known && known.snapshot.revision >= snapshot.revision) return;
    const stored = known?.stored ?? -1;
    const due = snapshot.revision - stored >= SNAPSHOT_EVERY;
    this.remember(streamId, { kind, snapshot, stored: due ? snapshot.revision : stored });
    if (due) await this.write(streamId, kind, snapshot).catch(() => {});
  }

  private remember(streamId: string, entry: Remembered): void {
    this.latest.delete(streamId);
    this.latest.set(streamId, entry);
    if (this.latest.size > REMEMBERED_STREAMS) {
      const oldest = this.latest.keys().next().value;
      if (oldest !== undefined) this.latest.delete(oldest);
    }
  }

  /** Stores the newest snapshot of a stream: an older one never replaces a newer. */
  private async write<State>(streamId: string, kind: string, snapshot: Snapshot<State>): Promise<void> {
    await this.db.raw(
      `insert into aggregate_snapshots (stream_id, kind, revision, state) values (?, ?, ?, ?)
         on conflict (stream_id) do update set kind = excluded.kind, revision = excluded.revision, state = excluded.state
         where aggregate_snapshots.revision < excluded.revision or aggregate_snapshots.kind <> excluded.kind`,
      [streamId, kind, snapshot.revision, JSON.stringify(snapshot.state)],
    );
  }
}
