import type { Knex } from "knex";
import { batchedPerDatabase } from "../db/batched.js";

export interface Snapshot<State> {
  revision: number;
  state: State;
}

/** How many events may follow the stored snapshot before a newer state is stored. */
const SNAPSHOT_EVERY = 50;
/**
 * How many streams' latest states a process keeps in memory (the least recently used go first).
 * A transfer is hot for the seconds between its send and its downloads, so a few thousand cover
 * a busy server; 10,000 transfers' states took the embedded server's peak from 368 to 396 MiB.
 */
const REMEMBERED_STREAMS = 2_000;

/**
 * When a state was read or decided, taken before reading: how many other processes' appends this
 * process had heard of (EventStore.foreignAppends; null when it could not tell), and how many of
 * its own appends had ended in a way it could not follow (`blind`).
 */
export interface Mark {
  heard: number | null;
  blind: number;
}

interface Remembered {
  /** Null for a stream only known to have been appended to here (`appended`). */
  kind: string | null;
  snapshot: Snapshot<unknown> | null;
  /** The revision of the snapshot stored in the table, as far as this process knows. */
  stored: number;
  /** When the snapshot was read or decided; null for one loaded from the table. */
  mark: Mark | null;
  /** The revision this process's own appends took the stream to, as far as it knows. */
  appended: number | null;
}

interface StoredSnapshot {
  stream_id: string;
  kind: string;
  revision: number | string;
  state: unknown;
}

/** Streams' stored snapshots, in one statement for the loads of many commands at once. */
const storedSnapshots = batchedPerDatabase(async (db, streamIds: string[]) => {
  const rows = await db("aggregate_snapshots")
    .whereIn("stream_id", [...new Set(streamIds)])
    .select<StoredSnapshot[]>("stream_id", "kind", "revision", "state");
  const byStream = new Map(rows.map((row) => [row.stream_id, row]));
  return streamIds.map((streamId) => byStream.get(streamId));
});

/**
 * Folded states of streams, as caches of the log, in two layers:
 *
 * - memory: the latest state this process read or decided of each stream. It is *current*, and a
 *   command decides on it without reading the log, while no other process has appended anything
 *   since it was read (the store's count of foreign appends has not moved) and this process's own
 *   appends to the stream are all in it (its revision is the last one they reached). A decision
 *   that appends still names the revision it decided on, so a state that went stale unseen
 *   (another process's append whose news is still on its way) costs a conflict and a re-read,
 *   never a wrong decision. A server alone on its database (the embedded default, or a single
 *   instance on PostgreSQL) reads its hot streams from here.
 * - the `aggregate_snapshots` table, for streams that grow with use: every SNAPSHOT_EVERY events a
 *   state is stored there, so a restarted or second process folds little. A state loaded from a
 *   snapshot is followed by the events after it.
 *
 * `kind` names the state's shape; a state of another kind (an older shape) is ignored.
 */
export class SnapshotStore {
  private readonly latest = new Map<string, Remembered>();
  private blindAppends = 0;

  constructor(
    private readonly db: Knex,
    /** EventStore.foreignAppends of the log these states fold. */
    private readonly foreignAppends: () => number | null,
  ) {}

  /** The mark of a state about to be read or decided. */
  mark(): Mark {
    return { heard: this.foreignAppends(), blind: this.blindAppends };
  }

  /** The remembered state of a stream when it is current (see the class), else null. */
  current<State>(streamId: string, kind: string): Snapshot<State> | null {
    const remembered = this.latest.get(streamId);
    if (remembered?.kind !== kind || !remembered.snapshot || !remembered.mark) return null;
    const { heard, blind } = remembered.mark;
    if (heard === null || heard !== this.foreignAppends() || blind !== this.blindAppends) return null;
    const { appended, snapshot } = remembered;
    return appended === null || appended === snapshot.revision ? (snapshot as Snapshot<State>) : null;
  }

  /** The latest state to fold the log's later events onto: remembered, else stored, else null. */
  async read<State>(streamId: string, kind: string): Promise<Snapshot<State> | null> {
    const remembered = this.latest.get(streamId);
    if (remembered?.kind === kind && remembered.snapshot) return remembered.snapshot as Snapshot<State>;
    const row = await storedSnapshots(this.db).call(streamId);
    if (row?.kind !== kind) return null;
    const snapshot = { revision: Number(row.revision), state: row.state as State };
    this.remember(streamId, {
      kind,
      snapshot,
      stored: snapshot.revision,
      mark: null,
      appended: remembered?.appended ?? null,
    });
    return snapshot;
  }

  /**
   * Keeps a stream's state at a revision, read or decided at `mark`: in memory for the next
   * command, and, unless `stored` is false (streams that stay short), in the table once
   * SNAPSHOT_EVERY events have followed the stored one. A failed write costs nothing but a longer
   * fold for the next process to load the stream.
   */
  async keep<State>(
    streamId: string,
    kind: string,
    snapshot: Snapshot<State>,
    mark: Mark,
    { stored: storable = true }: { stored?: boolean } = {},
  ): Promise<void> {
    const remembered = this.latest.get(streamId);
    const known = remembered?.kind === kind ? remembered : null;
    if (known?.snapshot && known.snapshot.revision > snapshot.revision) return;
    const stored = known?.stored ?? -1;
    const due = storable && snapshot.revision - stored >= SNAPSHOT_EVERY;
    this.remember(streamId, {
      kind,
      snapshot,
      stored: due ? snapshot.revision : stored,
      mark,
      appended: remembered?.appended ?? null,
    });
    if (due) await this.write(streamId, kind, snapshot).catch(() => {});
  }

  /** This process's append took a stream to `revision` (or found it there): older states are stale. */
  appended(streamId: string, revision: number): void {
    const remembered = this.latest.get(streamId);
    if (!remembered) {
      this.remember(streamId, { kind: null, snapshot: null, stored: -1, mark: null, appended: revision });
    } else if (remembered.appended === null || remembered.appended < revision) {
      remembered.appended = revision;
    }
  }

  /** An append of this process ended where it cannot tell which streams moved: nothing read before is current. */
  blind(): void {
    this.blindAppends++;
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
