import type { Knex } from "knex";
import { Batched } from "../db/batched.js";
import { statementsAtOnce } from "../db/database.js";
import { countAppended } from "../observability/metrics.js";
import { AppendSignal, DEFAULT_IDLE_POLL_MS, pollingSubscription } from "./catch-up.js";
import { GroupCommit } from "./group-commit.js";
import { upcastMetadata } from "./metadata.js";
import { APPEND_CHANNEL, AppendListener } from "./pg-notifications.js";
import {
  ANY,
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpectedVersion,
  isAfter,
  type LogPage,
  NO_STREAM,
  type Position,
  type RecordedEvent,
  type StreamAppend,
  type StreamRead,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedVersionError,
} from "./port.js";
import { readData } from "./upcast.js";

const DIGITS = 20;

/** Positions are (transaction id, global position), zero-padded so that string order is commit order. */
export function encodePosition(transactionId: string | number, globalPosition: string | number): Position {
  return `${String(transactionId).padStart(DIGITS, "0")}.${String(globalPosition).padStart(DIGITS, "0")}`;
}

function decodePosition(position: Position | null): [string, string] {
  if (position === null) return ["0", "0"];
  const [transactionId, globalPosition] = position.split(".");
  if (!transactionId || !globalPosition) throw new Error(`not a PostgreSQL event position: ${position}`);
  return [BigInt(transactionId).toString(), BigInt(globalPosition).toString()];
}

interface EventRow {
  global_position: string | number;
  transaction_text: string;
  event_id: string;
  stream_id: string;
  revision: string | number;
  type: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

function toRecorded(row: EventRow): RecordedEvent {
  return {
    eventId: row.event_id,
    streamId: row.stream_id,
    revision: Number(row.revision),
    type: row.type,
    ...readData(row.type, row.data),
    metadata: upcastMetadata(row.type, row.metadata),
    position: encodePosition(row.transaction_text, row.global_position),
  };
}

// The text form gets its own name: an output column called transaction_id would make ORDER BY
// transaction_id sort as text ("1000" before "757") instead of by transaction id.
const EVENT_COLUMNS =
  "global_position, transaction_id::text as transaction_text, event_id, stream_id, revision, type, data, metadata";
/**
 * The same, with data and metadata only for the types named by the two bindings that lead the
 * query's (each the types joined by commas: knex would spread an array binding into a list).
 */
const TYPED_EVENT_COLUMNS =
  "global_position, transaction_id::text as transaction_text, event_id, stream_id, revision, type, " +
  "case when type = any(string_to_array(?, ',')) then data end as data, " +
  "case when type = any(string_to_array(?, ',')) then metadata end as metadata";

/**
 * The event store on PostgreSQL, through knex: the same code runs on a pg pool and on PGlite.
 * Global reads stay below the oldest in-flight transaction, so no event is ever skipped.
 */
export interface PostgresEventStoreOptions {
  /**
   * How often idle subscribers look for appends they were not told of. Appends by this process wake
   * them at once; an embedded database has no other process, so it can poll rarely.
   */
  idlePollMs?: number;
  /**
   * A server shared by several processes: each append NOTIFYs, and subscribers LISTEN on a
   * connection of their own to this URL, so every instance sees every append at once.
   */
  listenUrl?: string;
  /** No other process can append (an embedded database, opened by one process at a time). */
  soleWriter?: boolean;
}

/** How many events the log holds, up to and including `until` when given: a progress line's total. */
export async function countEvents(db: Knex, until: Position | null = null): Promise<number> {
  const [transactionId, globalPosition] = decodePosition(until);
  const result = await db.raw<{ rows: { n: string | number }[] }>(
    until === null
      ? "select count(*) as n from events"
      : "select count(*) as n from events where (transaction_id, global_position) <= (?::xid8, ?::bigint)",
    until === null ? [] : [transactionId, globalPosition],
  );
  return Number(result.rows[0]?.n ?? 0);
}

export class PostgresEventStore implements EventStore {
  private readonly signal = new AppendSignal();
  private readonly idlePollMs: number;
  private readonly listener: AppendListener | null;
  private readonly soleWriter: boolean;
  private readonly appends: GroupCommit;
  /** Stream reads, batched: a busy service's commands read many streams at once. */
  private readonly reads: Batched<StreamRead, RecordedEvent[]>;
  /**
   * Reads of the log's pages, batched: an append wakes every subscription (projections, the
   * hasher, the reactors), and those caught up all ask for the page after the same position.
   */
  private readonly pages: Batched<PageRead, LogPage>;
  /**
   * The newest position known committed: the head as last read, or this process's own appends
   * since. A sole writer reads the head once; every append after that is its own, so this is the
   * head, and read-your-writes (ProjectionEngine.caughtUp) asks no query for it.
   */
  private newestKnown: Position | null = null;
  private headRead = false;

  constructor(
    private readonly db: Knex,
    options: PostgresEventStoreOptions = {},
  ) {
    this.idlePollMs = options.idlePollMs ?? DEFAULT_IDLE_POLL_MS;
    this.listener = options.listenUrl ? new AppendListener(options.listenUrl, this.signal) : null;
    this.soleWriter = options.soleWriter ?? false;
    this.appends = new GroupCommit((appends) => appendWith(this.db, appends, this.listener));
    this.reads = new Batched((reads) => readStreamsWith(this.db, reads), statementsAtOnce(db));
    this.pages = new Batched((reads) => readPagesWith(this.db, reads), statementsAtOnce(db));
  }

  /** Starts listening for other processes' appends (PostgreSQL only). */
  async open(): Promise<this> {
    await this.listener?.start();
    return this;
  }

  async append(streamId: string, expected: ExpectedVersion, events: EventToAppend[]): Promise<AppendResult> {
    const results = await this.commit([{ streamId, expected, events }]);
    const result = results[0];
    if (!result) throw new Error("append wrote no stream");
    return result;
  }

  async appendMany(appends: StreamAppend[]): Promise<{ position: Position }> {
    return { position: newestPosition(await this.commit(appends)) ?? "" };
  }

  async readStream(streamId: string, fromRevision = 0): Promise<RecordedEvent[]> {
    return this.reads.call({ streamId, fromRevision });
  }

  async readStreams(reads: StreamRead[]): Promise<RecordedEvent[][]> {
    if (new Set(reads.map((read) => read.streamId)).size !== reads.length) {
      throw new Error("readStreams reads each stream once");
    }
    // Queued together: a create's turn reads its account's two streams in one statement.
    return this.reads.callAll(reads);
  }

  async readAll(from: Position | null, limit: number): Promise<RecordedEvent[]> {
    return (await this.readPage(from, limit)).events;
  }

  /**
   * Up to `limit` events after `from`, as readAll; with `types`, the others come back without
   * their data (no JSON to send or parse), only to say how far the read looked.
   */
  private readPage(from: Position | null, limit: number, types?: readonly string[]): Promise<LogPage> {
    return this.pages.call({ from, limit, types });
  }

  async headPosition(): Promise<Position | null> {
    const rows = await this.db.raw<{ rows: EventRow[] }>(
      `select ${EVENT_COLUMNS} from events
        where transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        order by transaction_id desc, global_position desc
        limit 1`,
    );
    const row = rows.rows[0];
    return row ? toRecorded(row).position : null;
  }

  async committedPosition(): Promise<Position | null> {
    if (this.soleWriter && this.headRead) return this.newestKnown;
    const rows = await this.db.raw<{ rows: { transaction_text: string; global_position: string }[] }>(
      `select transaction_id::text as transaction_text, global_position from events
        order by transaction_id desc, global_position desc
        limit 1`,
    );
    const row = rows.rows[0];
    const head = row ? encodePosition(row.transaction_text, row.global_position) : null;
    this.committed(head);
    this.headRead = true;
    return head;
  }

  /** The log is known committed up to `position`. */
  private committed(position: Position | null | undefined): void {
    if (position && isAfter(position, this.newestKnown)) this.newestKnown = position;
  }

  subscribe(options: SubscribeOptions): Subscription {
    return pollingSubscription(
      (from, limit, types) => this.readPage(from, limit, types),
      this.signal,
      options,
      this.idlePollMs,
    );
  }

  foreignAppends(): number | null {
    if (this.soleWriter) return 0;
    return this.listener?.foreignAppends() ?? null;
  }

  async ping(): Promise<void> {
    await this.db.raw("select 1");
  }

  async close(): Promise<void> {
    await this.listener?.stop();
    this.signal.notify();
  }

  private async commit(appends: StreamAppend[]): Promise<AppendResult[]> {
    try {
      // Delivered when the statement commits, to every process that listens.
      const results = await this.appends.append(appends);
      const newest = newestPosition(results);
      this.committed(newest);
      this.signal.notify(newest);
      countAppended(appends);
      return results;
    } catch (error) {
      // A retried append whose events are already stored is not an error: each event id is stored once.
      const stored = await this.alreadyStored(appends);
      if (stored) {
        this.committed(newestPosition(stored));
        return stored;
      }
      throw error;
    }
  }

  /** The result of an earlier identical append, when every one of its events is already stored. */
  private async alreadyStored(appends: StreamAppend[]): Promise<AppendResult[] | null> {
    const ids = appends.flatMap((a) => a.events.map((e) => e.eventId));
    if (ids.length === 0) return null;
    const rows = await this.db.raw<{ rows: EventRow[] }>(
      `select ${EVENT_COLUMNS} from events where event_id = any(?::uuid[])`,
      [ids],
    );
    if (rows.rows.length !== ids.length) return null;
    const byId = new Map(rows.rows.map((row) => [row.event_id, toRecorded(row)]));
    return appends.map((append) => {
      const last = byId.get(append.events[append.events.length - 1]?.eventId ?? "");
      if (!last) throw new Error("stored event vanished");
      return { revision: last.revision, position: last.position };
    });
  }
}

/** The position of the last event the appends wrote (positions sort as strings). */
function newestPosition(results: AppendResult[]): Position | undefined {
  return results
    .map((r) => r.position)
    .sort()
    .at(-1);
}

/** How `handoff_append` (migrations/008_append_function.ts) names an expected version. */
function expectedCode(expected: ExpectedVersion): number {
  if (expected === NO_STREAM) return -1;
  if (expected === ANY) return -2;
  return expected;
}

/** The SQLSTATE `handoff_append` raises when a stream is not at its expected revision. */
const WRONG_EXPECTED_VERSION = "HV409";

/** A read of the log after `from` (LogPage). */
interface PageRead {
  from: Position | null;
  limit: number;
  types?: readonly string[] | undefined;
}

/**
 * Pages of the log, one statement for the reads after each position: readers after the same one
 * share a read of the most any of them asks for, each then given its own limit and types. The
 * events are shared between them: subscribers read events, never change them.
 */
async function readPagesWith(db: Knex, reads: PageRead[]): Promise<LogPage[]> {
  const byFrom = new Map<Position | null, PageRead[]>();
  for (const read of reads) {
    const readers = byFrom.get(read.from) ?? [];
    readers.push(read);
    byFrom.set(read.from, readers);
  }
  const rowsAfter = new Map<Position | null, EventRow[]>();
  for (const [from, readers] of byFrom) {
    const types = readers.some((reader) => !reader.types)
      ? undefined
      : [...new Set(readers.flatMap((reader) => reader.types ?? []))];
    rowsAfter.set(from, await readRows(db, from, Math.max(...readers.map((reader) => reader.limit)), types));
  }
  return reads.map(({ from, limit, types }) => {
    const rows = (rowsAfter.get(from) ?? []).slice(0, limit);
    const last = rows.at(-1);
    return {
      events: (types ? rows.filter((row) => types.includes(row.type)) : rows).map(toRecorded),
      scanned: rows.length,
      last: last ? encodePosition(last.transaction_text, last.global_position) : null,
    };
  });
}

/** Up to `limit` rows after `from`; with `types`, the others without their data and metadata. */
async function readRows(
  db: Knex,
  from: Position | null,
  limit: number,
  types: readonly string[] | undefined,
): Promise<EventRow[]> {
  const [transactionId, globalPosition] = decodePosition(from);
  const columns = types ? TYPED_EVENT_COLUMNS : EVENT_COLUMNS;
  const typeList = types?.join(",");
  const rows = await db.raw<{ rows: EventRow[] }>(
    `select ${columns} from events
      where (transaction_id, global_position) > (?::xid8, ?::bigint)
        and transaction_id < pg_snapshot_xmin(pg_current_snapshot())
      order by transaction_id, global_position
      limit ?`,
    [...(typeList === undefined ? [] : [typeList, typeList]), transactionId, globalPosition, limit],
  );
  return rows.rows;
}

/**
 * Streams' events in one statement, each read as asked (from its revision on); a stream asked for
 * twice in a batch is read once, from the earlier revision.
 */
async function readStreamsWith(db: Knex, reads: StreamRead[]): Promise<RecordedEvent[][]> {
  const from = new Map<string, number>();
  for (const { streamId, fromRevision } of reads) {
    from.set(streamId, Math.min(fromRevision, from.get(streamId) ?? fromRevision));
  }
  const rows = await db.raw<{ rows: EventRow[] }>(
    `select ${EVENT_COLUMNS} from events
      where ${[...from.keys()].map(() => "(stream_id = ? and revision >= ?)").join(" or ")}
      order by stream_id, revision`,
    [...from].flat(),
  );
  const byStream = new Map<string, RecordedEvent[]>();
  for (const row of rows.rows) {
    const recorded = toRecorded(row);
    const events = byStream.get(recorded.streamId) ?? [];
    events.push(recorded);
    byStream.set(recorded.streamId, events);
  }
  return reads.map(({ streamId, fromRevision }) =>
    (byStream.get(streamId) ?? []).filter((event) => event.revision >= fromRevision),
  );
}

/**
 * Appends to every stream in one statement (one round trip): expected versions are checked on the
 * `event_streams` rows, whose row locks make a concurrent writer wait for the first to commit and
 * then re-check, so a create-only append to a stream another writer just created is rejected,
 * never merged. On a transaction (`db` may be one) the append commits with it.
 */
export async function appendWith(
  db: Knex | Knex.Transaction,
  appends: StreamAppend[],
  listener: AppendListener | null = null,
): Promise<AppendResult[]> {
  const payload = appends.map(({ streamId, expected, events }) => {
    if (events.length === 0) throw new Error(`empty append to ${streamId}`);
    return {
      stream_id: streamId,
      expected: expectedCode(expected),
      events: events.map((event) => ({
        event_id: event.eventId,
        type: event.type,
        data: event.data,
        metadata: event.metadata,
      })),
    };
  });
  try {
    const result = await db.raw<{
      rows: { last_revision: string | number; transaction_text: string; last_position: string | number }[];
    }>("select * from handoff_append(?::jsonb, ?, ?)", [
      JSON.stringify(payload),
      listener ? APPEND_CHANNEL : null,
      listener?.instanceId ?? null,
    ]);
    return result.rows.map((row) => ({
      revision: Number(row.last_revision),
      position: encodePosition(row.transaction_text, row.last_position),
    }));
  } catch (error) {
    throw wrongExpectedVersion(error, appends) ?? error;
  }
}

/** The WrongExpectedVersionError a refused append stands for, or null for any other failure. */
function wrongExpectedVersion(error: unknown, appends: StreamAppend[]): WrongExpectedVersionError | null {
  const { code, detail } = (error ?? {}) as { code?: string; detail?: string };
  if (code !== WRONG_EXPECTED_VERSION || !detail) return null;
  const refused = JSON.parse(detail) as { stream_id: string; actual: number | null };
  const append = appends.find((a) => a.streamId === refused.stream_id);
  return new WrongExpectedVersionError(refused.stream_id, append?.expected ?? ANY, refused.actual);
}
