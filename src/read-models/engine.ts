import type { Knex } from "knex";
import { type BatchRows, type Projection, sees } from "../../projections/projection.js";
import type { EventStore, Position, RecordedEvent, Subscription } from "../eventstore/port.js";
import { isAfter } from "../eventstore/port.js";
import type { ReadModelFollower } from "./hot-rows.js";

export interface RebuildProgress {
  projection: string;
  events: number;
  done: boolean;
}

const REBUILD_BATCH = 5000;

/** How long a reader or an answer waits for the read models before it goes without them (the write stands). */
export const READ_YOUR_WRITES_TIMEOUT_MS = 5000;
/** Events read and applied per transaction while catching up; under load, concurrent requests share one. */
const BATCH_SIZE = 500;
/**
 * Under load, while someone waits for them (a read after a write, a long-poll, an event stream,
 * the webhook reactor), the read models take the appends of at least this long in one batch. A
 * batch costs about six round trips to the database whatever its size, and each is dear (a socket
 * write and a wake-up of the database's process); a request that reads the models after a write
 * waits for at most this much more.
 */
const READ_INTERVAL_MS = 10;
/**
 * While no one waits for them, the read models take the appends of this long in one batch: the
 * sends and downloads that make most of the load answer from their decided state and never wait,
 * and with one client a batch every 10 ms was a batch for nearly every append, some ten
 * statements for each create and each download (issue 21). Whoever starts waiting cuts it short.
 * Not longer: under 32 clients 100 ms made batches of some 450 events, each a long stretch of the
 * request thread, and the pairs' p99 rose by a tenth.
 */
const UNWATCHED_READ_INTERVAL_MS = 50;

/** Another process moved a checkpoint (a rebuild, or a second instance): read them again and go on. */
class CheckpointMoved extends Error {}

/** Each projection's position in the log: the last event its tables hold (null: none yet). */
export type Checkpoints = Map<string, Position | null>;

/**
 * Runs every projection from ONE catch-up subscription: the log is read once, and each batch is
 * applied to every projection in one transaction that also moves their checkpoints, with a
 * compare-and-set on them. A crash never applies an event twice or skips one, two instances never
 * apply the same batch, and each projection keeps its own checkpoint, so one that is behind (newly
 * added, or rebuilt) catches up from where it is while the others skip what they already have.
 */
export class ProjectionEngine {
  private subscription: Subscription | null = null;
  private checkpoints: Checkpoints = new Map();
  private readonly listeners = new Set<() => void>();
  private readonly followers: ReadModelFollower[] = [];
  private stopped = true;

  constructor(
    readonly projections: Projection[],
    private readonly store: EventStore,
    private readonly db: Knex,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Caches of the read models (HotRows): told of every batch before anyone waiting on them is. */
  follow(follower: ReadModelFollower): void {
    this.followers.push(follower);
  }

  async start(): Promise<void> {
    this.stopped = false;
    for (const follower of this.followers) follower.following(true);
    await this.subscribeFromCheckpoints();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const follower of this.followers) follower.following(false);
    await this.subscription?.stop();
    this.subscription = null;
  }

  /** Names of the projections that have not yet applied everything up to `position`. */
  behind(position: Position | null): string[] {
    if (position === null) return [];
    return this.projections
      .filter((p) => isAfter(position, this.checkpoints.get(p.name) ?? null))
      .map((p) => p.name);
  }

  /**
   * Read-your-writes for a reader: resolves true once every projection has applied everything
   * committed to the log before the call, on any instance, or false after `timeoutMs`.
   */
  async caughtUp(timeoutMs = READ_YOUR_WRITES_TIMEOUT_MS): Promise<boolean> {
    return this.waitFor(await this.store.committedPosition(), timeoutMs);
  }

  /**
   * Read-your-writes: resolves true once every projection has applied `position`, or false after
   * `timeoutMs` (the write stands either way; only its visibility is late).
   */
  waitFor(position: Position | null, timeoutMs: number): Promise<boolean> {
    if (this.behind(position).length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const finish = (result: boolean) => {
        clearTimeout(timer);
        unsubscribe();
        resolve(result);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      const unsubscribe = this.onAdvance(() => this.behind(position).length === 0 && finish(true));
    });
  }

  /** Calls `listener` after every batch the read models apply; they read closely while anyone listens. */
  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    this.subscription?.hurry();
    return () => this.listeners.delete(listener);
  }

  /** How many wait on the read models now (long-polls, event streams, read-your-writes): a client gone leaves none. */
  get waiting(): number {
    return this.listeners.size;
  }

  /** How far behind the log the read models are: events not yet applied, and the age of the oldest. */
  async lag(): Promise<{ events: number; ms: number }> {
    const from = oldest(this.checkpoints, this.projections);
    const pending = await this.store.readAll(from, BATCH_SIZE);
    const first = pending[0];
    return {
      events: pending.length,
      ms: first ? Math.max(0, Date.now() - Date.parse(first.metadata.occurredAt)) : 0,
    };
  }

  /**
   * Empties the named projections' tables and refills them from the whole log. Safe beside a
   * running instance on PostgreSQL: every batch is a compare-and-set on the checkpoints, so whoever
   * applies a batch first wins and the other goes on from there. `handoff projections rebuild`
   * builds beside the live tables instead and switches them in (src/read-models/rebuild-beside.ts);
   * this is for a scratch database (a replay) and for tests.
   */
  async rebuild(names: string | string[], progress: (p: RebuildProgress) => void): Promise<void> {
    const rebuilt = this.named(typeof names === "string" ? [names] : names);
    const label = rebuilt.map((p) => p.name).join(", ");
    let checkpoints: Checkpoints = new Map(rebuilt.map((p) => [p.name, null]));
    await this.db.transaction(async (trx) => {
      await lockCheckpoints(trx, rebuilt);
      for (const table of rebuilt.flatMap((p) => p.tables)) await trx.raw("truncate table ??", [table]);
      await trx("projection_checkpoints")
        .whereIn("name", [...checkpoints.keys()])
        .update({ position: null });
    });
    let events = 0;
    for (;;) {
      try {
        checkpoints = await replayLog(this.db, this.store, rebuilt, checkpoints, {
          onBatch: (applied) => {
            events += applied;
            progress({ projection: label, events, done: false });
          },
        });
        break;
      } catch (error) {
        if (!(error instanceof CheckpointMoved)) throw error;
        checkpoints = await this.db.transaction((trx) => lockCheckpoints(trx, rebuilt));
      }
    }
    for (const follower of this.followers) follower.drop();
    progress({ projection: label, events, done: true });
  }

  private named(names: string[]): Projection[] {
    return names.map((name) => {
      const projection = this.projections.find((p) => p.name === name);
      if (!projection) throw new Error(`unknown projection ${name}`);
      return projection;
    });
  }

  private async subscribeFromCheckpoints(): Promise<void> {
    const checkpoints = await this.db.transaction((trx) => lockCheckpoints(trx, this.projections));
    if (this.stopped) return;
    this.checkpoints = checkpoints;
    // Another instance may have moved the read models on: what was cached of them goes, and
    // whoever waits for them looks again.
    for (const follower of this.followers) follower.drop();
    this.notify();
    this.subscription = this.store.subscribe({
      from: oldest(checkpoints, this.projections),
      batchSize: BATCH_SIZE,
      readIntervalMs: () => (this.listeners.size > 0 ? READ_INTERVAL_MS : UNWATCHED_READ_INTERVAL_MS),
      handle: (batch) => this.applyBatch(batch),
      onError: (error) => {
        if (error instanceof CheckpointMoved) {
          void this.restart();
          return;
        }
        this.onError(error);
      },
    });
  }

  private async applyBatch(batch: RecordedEvent[]): Promise<void> {
    this.checkpoints = await applyBatch(this.db, this.projections, this.checkpoints, batch);
    for (const follower of this.followers) follower.applied(batch);
    this.notify();
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }

  private async restart(): Promise<void> {
    await this.subscription?.stop();
    this.subscription = null;
    if (!this.stopped) await this.subscribeFromCheckpoints();
  }
}

/** Readies a rebuild's batch transaction before anything is written in it (its schema, its durability). */
export type PrepareBatch = (trx: Knex.Transaction) => Promise<void>;

export interface ReplayLogOptions {
  /** Told how many events each batch applied, once it is committed. */
  onBatch?: (events: number) => void;
  prepare?: PrepareBatch;
  /** Stop after this many batches (the log may hold more); unbounded when absent. */
  batches?: number;
}

/**
 * Applies the log after `checkpoints` to `projections`, REBUILD_BATCH events a transaction, until a
 * read comes back short of a whole batch; returns the new checkpoints. The next batch is read, and
 * its rows made (Projection.rowsOfBatch), while one is applied, so at most two batches are in
 * memory whatever the log's size, and a rebuild costs the slower of reading, making rows and
 * writing rather than all three. Each batch is applied in lanes at once (lanesOf), each lane a
 * transaction on a connection of its own; on a transaction `db` (the switch of a rebuild beside),
 * in one, and nothing is prepared ahead.
 */
export async function replayLog(
  db: Knex | Knex.Transaction,
  store: EventStore,
  projections: Projection[],
  checkpoints: Checkpoints,
  options: ReplayLogOptions = {},
): Promise<Checkpoints> {
  const lanes = db.isTransaction ? [projections] : lanesOf(projections);
  const making = db.isTransaction ? [] : projections.filter((p) => p.rowsOfBatch);
  const rowsAhead = (batch: RecordedEvent[], earlier: RowsByProjection) =>
    batch.length === 0 || making.length === 0
      ? Promise.resolve(new Map() as RowsByProjection)
      : rowsOfBatches(db as Knex, making, batch, earlier, options.prepare);
  let batch = await store.readAll(oldest(checkpoints, projections), REBUILD_BATCH);
  let rows = await rowsAhead(batch, new Map());
  for (let batches = 1; batch.length > 0; batches++) {
    const last = batch.at(-1)?.position ?? null;
    const more = batch.length === REBUILD_BATCH && batches !== options.batches;
    const applying = applyInLanes(db, lanes, checkpoints, batch, options.prepare, rows);
    const earlier = rows;
    const next = (more ? store.readAll(last, REBUILD_BATCH) : Promise.resolve([])).then(async (events) => ({
      events,
      rows: await rowsAhead(events, earlier),
    }));
    // A failed apply must not leave the read ahead's rejection unheard.
    next.catch(() => {});
    checkpoints = await applying;
    options.onBatch?.(batch.length);
    ({ events: batch, rows } = await next);
  }
  return checkpoints;
}

/** What each projection's rowsOfBatch made of a batch, by name. */
type RowsByProjection = Map<string, BatchRows>;

/**
 * Each of `projections`' rowsOfBatch of `batch`, its look-ups in one transaction readied as the
 * batches' are (a rebuild's reads its own schema). Run while the batch before is being written:
 * the database shows every batch before that one, and `earlier` holds what was made of it.
 */
async function rowsOfBatches(
  db: Knex,
  projections: Projection[],
  batch: RecordedEvent[],
  earlier: RowsByProjection,
  prepare?: PrepareBatch,
): Promise<RowsByProjection> {
  return db.transaction(async (trx) => {
    await prepare?.(trx);
    const made = await Promise.all(
      projections.map(
        (p) => p.rowsOfBatch?.(trx, batch, earlier.get(p.name) ?? null) ?? Promise.resolve(null),
      ),
    );
    return new Map(projections.flatMap((p, i) => (made[i] ? [[p.name, made[i]] as const] : [])));
  });
}

/**
 * The projections split into lanes that apply a batch side by side: each that takes a batch whole
 * (Projection.applyBatch, the ones with most rows to write) in a lane of its own, the others
 * together. While one lane's statements run in the database, the next lane's rows are made here:
 * on one connection the two would take turns and each side would wait for the other.
 */
function lanesOf(projections: Projection[]): Projection[][] {
  const whole = projections.filter((p) => p.applyBatch);
  const rest = projections.filter((p) => !p.applyBatch);
  return [...whole.map((p) => [p]), ...(rest.length > 0 ? [rest] : [])];
}

/**
 * Applies a batch to each lane in a transaction of its own, all at once, and returns the new
 * checkpoints. Each lane's checkpoints move with its rows, so a lane that fails leaves the others'
 * applied and its own where they were; the first failure is thrown once every lane has ended.
 */
async function applyInLanes(
  db: Knex | Knex.Transaction,
  lanes: Projection[][],
  expected: Checkpoints,
  batch: RecordedEvent[],
  prepare?: PrepareBatch,
  rows?: RowsByProjection,
): Promise<Checkpoints> {
  const results = await Promise.allSettled(
    lanes.map((lane) => applyBatch(db, lane, expected, batch, prepare, rows)),
  );
  const moved = new Map(expected);
  for (const [i, result] of results.entries()) {
    if (result.status === "rejected") throw result.reason;
    for (const { name } of lanes[i] ?? []) moved.set(name, result.value.get(name) ?? null);
  }
  return moved;
}

/**
 * Applies a batch to each projection that has not seen its events, in one transaction that moves
 * their checkpoints from `expected`; throws CheckpointMoved when another process moved one first.
 * Returns the new checkpoints. On a transaction `db`, the batch is a savepoint of it.
 */
async function applyBatch(
  db: Knex | Knex.Transaction,
  projections: Projection[],
  expected: Checkpoints,
  batch: RecordedEvent[],
  prepare?: PrepareBatch,
  rows?: RowsByProjection,
): Promise<Checkpoints> {
  const [first] = batch;
  const last = batch.at(-1);
  if (!first || !last) return expected;
  const moved: Checkpoints = new Map();
  await db.transaction(async (trx) => {
    await prepare?.(trx);
    const due = projections.filter((p) => isAfter(last.position, expected.get(p.name) ?? null));
    // Compare-and-set first: it takes the checkpoint rows, so a second instance waits here, then
    // finds them moved and reads them again instead of applying the batch twice.
    for (const [from, names] of groupBy(due, (p) => expected.get(p.name) ?? null)) {
      const updated = await trx("projection_checkpoints")
        .whereIn("name", names)
        .whereRaw("position is not distinct from ?", [from])
        .update({ position: last.position });
      if (updated !== names.length) throw new CheckpointMoved(`checkpoints of ${names.join(", ")} moved`);
    }
    for (const projection of due) {
      const from = expected.get(projection.name) ?? null;
      // Mostly the whole batch: a projection behind the others is the exception.
      const unseen = isAfter(first.position, from)
        ? batch
        : batch.filter((event) => isAfter(event.position, from));
      if (projection.applyBatch) await projection.applyBatch(trx, unseen, rows?.get(projection.name));
      else for (const event of unseen) if (sees(projection, event)) await projection.apply(trx, event);
      moved.set(projection.name, last.position);
    }
  });
  return new Map([...expected, ...moved]);
}

/** The position the log must be read from so that no projection misses an event. */
function oldest(checkpoints: Checkpoints, projections: Projection[]): Position | null {
  let from: Position | null | undefined;
  for (const { name } of projections) {
    const position = checkpoints.get(name) ?? null;
    if (from === undefined || position === null || (from !== null && position < from)) from = position;
  }
  return from ?? null;
}

/** Reads the projections' checkpoints, creating missing ones, and holds their rows until the transaction ends. */
async function lockCheckpoints(trx: Knex.Transaction, projections: Projection[]): Promise<Checkpoints> {
  const names = projections.map((p) => p.name);
  await trx.raw(
    `insert into projection_checkpoints (name, position)
       select unnest(?::text[]), null on conflict do nothing`,
    [names],
  );
  const rows = await trx("projection_checkpoints")
    .whereIn("name", names)
    .orderBy("name")
    .forUpdate()
    .select<{ name: string; position: string | null }[]>("name", "position");
  return new Map(rows.map((row) => [row.name, row.position]));
}

/** Projection names grouped by the checkpoint each is at. */
function groupBy(projections: Projection[], key: (p: Projection) => Position | null) {
  const groups = new Map<Position | null, string[]>();
  for (const projection of projections) {
    const position = key(projection);
    groups.set(position, [...(groups.get(position) ?? []), projection.name]);
  }
  return groups;
}
