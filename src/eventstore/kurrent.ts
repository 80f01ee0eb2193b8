import {
  type AppendStreamRequest,
  type AppendStreamState,
  BACKWARDS,
  type CurrentStreamState,
  END,
  type EventData,
  FORWARDS,
  jsonEvent,
  ANY as KURRENT_ANY,
  NO_STREAM as KURRENT_NO_STREAM,
  KurrentDBClient,
  WrongExpectedVersionError as KurrentWrongExpectedVersion,
  type Position as LogPosition,
  START,
  StreamNotFoundError,
} from "@kurrent/kurrentdb-client";
import { countAppended } from "../observability/metrics.js";
import { AppendSignal, pollingSubscription } from "./catch-up.js";
import { upcastMetadata } from "./metadata.js";
import {
  ANY,
  type AppendResult,
  type EventMetadata,
  type EventStore,
  type EventToAppend,
  type ExpectedVersion,
  NO_STREAM,
  type Position,
  pageOf,
  type RecordedEvent,
  type StreamAppend,
  type StreamRead,
  type SubscribeOptions,
  type Subscription,
  WrongExpectedVersionError,
} from "./port.js";
import { readData } from "./upcast.js";

const DIGITS = 20;

/** `{commit, prepare}` zero-padded so that plain string order is log order. */
export function encodePosition({ commit, prepare }: LogPosition): Position {
  return `${commit.toString().padStart(DIGITS, "0")}.${prepare.toString().padStart(DIGITS, "0")}`;
}

function decodePosition(position: Position): LogPosition {
  const [commit, prepare] = position.split(".");
  if (!commit || !prepare) throw new Error(`not a KurrentDB event position: ${position}`);
  return { commit: BigInt(commit), prepare: BigInt(prepare) };
}

/**
 * Multi-stream appends (KurrentDB 25.1, protocol v2) only carry string-valued metadata, so the
 * whole metadata object travels as JSON under this one property and is unwrapped on read.
 */
const METADATA_PROPERTY = "handoff.metadata";

/** Events the server keeps for itself: system types (`$metadata`, links) and `$`-streams. */
function isSystemEvent(event: { type: string; streamId: string }): boolean {
  return event.type.startsWith("$") || event.streamId.startsWith("$");
}

/** What both stream and `$all` reads yield; `position` is missing on servers before 22.6. */
interface StoredEvent {
  id: string;
  streamId: string;
  revision: bigint;
  type: string;
  data: unknown;
  metadata: unknown;
  position?: LogPosition;
}

function positionOf(event: StoredEvent, commitPosition: bigint | undefined): Position {
  if (event.position) return encodePosition(event.position);
  // Without an explicit position the record is a committed prepare, whose prepare equals its commit.
  if (commitPosition !== undefined) {
    return encodePosition({ commit: commitPosition, prepare: commitPosition });
  }
  throw new Error(`KurrentDB returned no position for ${event.streamId}@${event.revision}; needs 22.6+`);
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  const parsed = value instanceof Uint8Array ? JSON.parse(Buffer.from(value).toString("utf8")) : value;
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${what} is not a JSON object`);
  }
  return parsed as Record<string, unknown>;
}

function toMetadata(type: string, value: unknown, what: string): EventMetadata {
  if (value === undefined) return upcastMetadata(type, {});
  const metadata = asObject(value, what);
  const wrapped = metadata[METADATA_PROPERTY];
  if (typeof wrapped === "string") return upcastMetadata(type, asObject(JSON.parse(wrapped), what));
  // `$` keys are the server's own (such as `$schema.name`), never ours.
  return upcastMetadata(
    type,
    Object.fromEntries(Object.entries(metadata).filter(([key]) => !key.startsWith("$"))),
  );
}

function toRecorded(event: StoredEvent, position: Position): RecordedEvent {
  const what = `event ${event.id} in ${event.streamId}`;
  return {
    eventId: event.id,
    streamId: event.streamId,
    revision: Number(event.revision),
    type: event.type,
    ...readData(event.type, asObject(event.data, `data of ${what}`)),
    metadata: toMetadata(event.type, event.metadata, `metadata of ${what}`),
    position,
  };
}

function toStreamState(expected: ExpectedVersion): AppendStreamState {
  if (expected === NO_STREAM) return KURRENT_NO_STREAM;
  if (expected === ANY) return KURRENT_ANY;
  return BigInt(expected);
}

function toActual(state: CurrentStreamState): number | null {
  return typeof state === "bigint" && state >= 0n ? Number(state) : null;
}

function toEventData({ eventId, type, data, metadata }: EventToAppend): EventData {
  return jsonEvent({ id: eventId, type, data, metadata });
}

/** How KurrentDB 25.1's multi-stream append takes an event: metadata wrapped as one string property. */
function toSessionEventData({ eventId, type, data, metadata }: EventToAppend): EventData {
  return jsonEvent({ id: eventId, type, data, metadata: { [METADATA_PROPERTY]: JSON.stringify(metadata) } });
}

/** Smallest page read from `$all`, so that runs of system events are skipped in few round trips. */
const SCAN_PAGE = 100;

/**
 * The event store on KurrentDB (or EventStoreDB 22.6+). Appends use the stream's own
 * optimistic concurrency and the event id as idempotency key; global reads page through `$all`
 * and drop system events on the client so that a page of them can never stall a reader.
 */
export class KurrentEventStore implements EventStore {
  private readonly signal = new AppendSignal();

  constructor(private readonly client: KurrentDBClient) {}

  /** Connects and checks the server answers, so a wrong URL fails at start-up, not at first use. */
  static async connect(connectionString: string): Promise<KurrentEventStore> {
    const store = new KurrentEventStore(KurrentDBClient.connectionString(connectionString));
    try {
      await store.ping();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  async append(streamId: string, expected: ExpectedVersion, events: EventToAppend[]): Promise<AppendResult> {
    if (events.length === 0) throw new Error(`empty append to ${streamId}`);
    let result: Awaited<ReturnType<KurrentDBClient["appendToStream"]>>;
    try {
      const streamState = toStreamState(expected);
      result = await this.client.appendToStream(streamId, events.map(toEventData), { streamState });
    } catch (error) {
      if (!(error instanceof KurrentWrongExpectedVersion)) throw error;
      const stored = await this.alreadyStored([{ streamId, expected, events }]);
      if (stored) return stored;
      throw new WrongExpectedVersionError(streamId, expected, toActual(error.actualState));
    }
    // Only reachable when the connection string sets throwOnAppendFailure=false.
    if (!result.success) {
      throw new WrongExpectedVersionError(streamId, expected, toActual(result.nextExpectedRevision));
    }
    this.signal.notify();
    countAppended([{ events }]);
    const revision = Number(result.nextExpectedRevision);
    const position = result.position
      ? encodePosition(result.position)
      : await this.positionAt(streamId, result.nextExpectedRevision);
    return { revision, position };
  }

  /**
   * One atomic commit through KurrentDB's multi-stream append (client 1.3's `multiStreamAppend`,
   * server 25.1+). Older servers make the client throw UnsupportedError: there is deliberately no
   * fallback to one append per stream, which would not be all-or-nothing.
   */
  async appendMany(appends: StreamAppend[]): Promise<{ position: Position }> {
    const [only, ...more] = appends;
    if (!only) throw new Error("appendMany needs at least one stream");
    // A single stream is atomic on its own and needs no 25.1 server.
    if (more.length === 0) {
      const { position } = await this.append(only.streamId, only.expected, only.events);
      return { position };
    }
    const streams = new Set(appends.map((a) => a.streamId));
    if (streams.size !== appends.length) {
      throw new Error("appendMany takes each stream once: KurrentDB rejects a stream twice in one commit");
    }
    for (const a of appends) if (a.events.length === 0) throw new Error(`empty append to ${a.streamId}`);

    const requests: AppendStreamRequest[] = appends.map((a) => ({
      streamName: a.streamId,
      expectedState: toStreamState(a.expected),
      events: a.events.map(toSessionEventData),
    }));
    try {
      await this.client.multiStreamAppend(requests);
    } catch (error) {
      if (!(error instanceof KurrentWrongExpectedVersion)) throw error;
      const stored = await this.alreadyStored(appends);
      if (stored) return { position: stored.position };
      const failed = appends.find((a) => a.streamId === error.streamName);
      throw new WrongExpectedVersionError(
        error.streamName,
        failed?.expected ?? ANY,
        toActual(error.actualState),
      );
    }
    this.signal.notify();
    countAppended(appends);
    // The call answers with one log position for the whole commit; the positions that readAll
    // reports are per event, so read back where each stream now ends and take the furthest.
    const ends = await Promise.all(appends.map((a) => this.lastPositionOf(a.streamId)));
    return { position: ends.sort().at(-1) ?? "" };
  }

  /** Where a stream ends now: the position of its last event. */
  private async lastPositionOf(streamId: string): Promise<Position> {
    for await (const resolved of this.client.readStream(streamId, {
      fromRevision: END,
      direction: BACKWARDS,
      maxCount: 1,
    })) {
      if (resolved.event) return positionOf(resolved.event, resolved.commitPosition);
    }
    throw new Error(`stream ${streamId} is empty right after an append to it`);
  }

  async readStreams(reads: StreamRead[]): Promise<RecordedEvent[][]> {
    return Promise.all(reads.map((read) => this.readStream(read.streamId, read.fromRevision)));
  }

  async readStream(streamId: string, fromRevision = 0): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(streamId, { fromRevision: BigInt(fromRevision) })) {
        if (!resolved.event) continue;
        events.push(toRecorded(resolved.event, positionOf(resolved.event, resolved.commitPosition)));
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  async readAll(from: Position | null, limit: number): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    let cursor = from;
    while (events.length < limit) {
      // Reading from a position includes the event at it, hence one more than still wanted.
      const pageSize = Math.max(limit - events.length, SCAN_PAGE) + (cursor === null ? 0 : 1);
      const page = await this.readAllPage(cursor === null ? START : decodePosition(cursor), pageSize);
      let advanced = false;
      for (const { event, position } of page) {
        if (cursor !== null && position <= cursor) continue;
        cursor = position;
        advanced = true;
        if (!isSystemEvent(event) && events.length < limit) events.push(toRecorded(event, position));
      }
      if (page.length < pageSize || !advanced) break;
    }
    return events;
  }

  /** KurrentDB shows readers every committed event at once. */
  committedPosition(): Promise<Position | null> {
    return this.headPosition();
  }

  async headPosition(): Promise<Position | null> {
    let cursor: Position | null = null;
    for (;;) {
      const pageSize = SCAN_PAGE + (cursor === null ? 0 : 1);
      const page = await this.readAllPage(cursor === null ? END : decodePosition(cursor), pageSize, true);
      let advanced = false;
      for (const { event, position } of page) {
        if (cursor !== null && position >= cursor) continue;
        if (!isSystemEvent(event)) return position;
        cursor = position;
        advanced = true;
      }
      if (page.length < pageSize || !advanced) return null;
    }
  }

  subscribe(options: SubscribeOptions): Subscription {
    return pollingSubscription(
      async (from, limit, types) => pageOf(await this.readAll(from, limit), types),
      this.signal,
      options,
    );
  }

  /** Other clients' appends are not announced to this one: remembered states are never trusted unread. */
  foreignAppends(): null {
    return null;
  }

  async ping(): Promise<void> {
    await this.readAllPage(END, 1, true);
  }

  async close(): Promise<void> {
    this.signal.notify();
    await this.client.dispose();
  }

  /** One page of `$all`, unfiltered: the caller skips system events so page ends stay exact. */
  private async readAllPage(
    fromPosition: LogPosition | typeof START | typeof END,
    maxCount: number,
    backwards = false,
  ): Promise<{ event: StoredEvent; position: Position }[]> {
    const page: { event: StoredEvent; position: Position }[] = [];
    const direction = backwards ? BACKWARDS : FORWARDS;
    for await (const { event, commitPosition } of this.client.readAll({
      fromPosition,
      maxCount,
      direction,
    })) {
      if (event) page.push({ event, position: positionOf(event, commitPosition) });
    }
    return page;
  }

  private async positionAt(streamId: string, revision: bigint): Promise<Position> {
    for await (const resolved of this.client.readStream(streamId, { fromRevision: revision, maxCount: 1 })) {
      if (resolved.event) return positionOf(resolved.event, resolved.commitPosition);
    }
    throw new Error(`${streamId}@${revision} vanished right after its append`);
  }

  /**
   * The result of an earlier identical append whose acknowledgement was lost: the retry fails its
   * version check, yet every one of its events is already stored under its id.
   */
  private async alreadyStored(appends: StreamAppend[]): Promise<AppendResult | null> {
    let last: AppendResult | null = null;
    for (const append of appends) {
      const stored = new Map((await this.readStream(append.streamId)).map((e) => [e.eventId, e]));
      const found = append.events.map((e) => stored.get(e.eventId));
      const lastEvent = found[found.length - 1];
      if (!lastEvent || found.some((e) => e === undefined)) return null;
      if (!last || lastEvent.position > last.position) {
        last = { revision: lastEvent.revision, position: lastEvent.position };
      }
    }
    return last;
  }
}
