import type { Knex } from "knex";

export interface Snapshot<State> {
  revision: number;
  state: State;
}

/**
 * Folded states of streams that grow with use, kept in the read-model database. A cache of the
 * log: a missing or stale snapshot only costs a longer fold. `kind` names the state's shape; a
 * snapshot of another kind (an older shape) is ignored.
 */
export class SnapshotStore {
  constructor(private readonly db: Knex) {}

  async read<State>(streamId: string, kind: string): Promise<Snapshot<State> | null> {
    const row = await this.db("aggregate_snapshots")
      .where({ stream_id: streamId, kind })
      .first<{ revision: number | string; state: State } | undefined>();
    return row ? { revision: Number(row.revision), state: row.state } : null;
  }

  /** Keeps the newest snapshot of a stream: an older one never replaces a newer. */
  async write<State>(streamId: string, kind: string, snapshot: Snapshot<State>): Promise<void> {
    await this.db.raw(
      `insert into aggregate_snapshots (stream_id, kind, revision, state) values (?, ?, ?, ?)
         on conflict (stream_id) do update set kind = excluded.kind, revision = excluded.revision, state = excluded.state
         where aggregate_snapshots.revision < excluded.revision or aggregate_snapshots.kind <> excluded.kind`,
      [streamId, kind, snapshot.revision, JSON.stringify(snapshot.state)],
    );
  }
}
