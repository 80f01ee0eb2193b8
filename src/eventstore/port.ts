import type { EventMetadata, Position, RecordedEvent } from "../../domain/recorded-event.js";

/**
 * The event store port: every adapter (PostgreSQL/PGlite, KurrentDB) honours this contract,
 * checked by the shared suite in test/contract/event-store.contract.ts.
 */

/** Append only if the stream has no events yet. */
export const NO_STREAM = "no_stream" as const;
/** Append whatever the stream holds. */
export const ANY = "any" as const;

/**
 * What the writer believes about the stream: it does not exist, anything goes, or its last
 * event has exactly this 0-based revision.
 */
export type ExpectedVersion = typeof NO_STREAM | typeof ANY | number;

export type { EventMetadata, Position, RecordedEvent } from "../../domain/recorded-event.js";

export interface EventToAppend {
  eventId: string;
  type: string;
  data: Record<string, unknown>;
  metadata: EventMetadata;
}

export interface StreamAppend {
  streamId: string;
  expected: ExpectedVersion;
  events: EventToAppend[];
}

export interface AppendResult {
  /** Revision of the last event now in the stream. */
  revision: number;
  /** Global position of the last event written. */
  position: Position;
}

export interface Subscription {
  stop(): Promise<void>;
  /** Ends a wait between reads at once: someone needs what the next read brings (readIntervalMs). */
  hurry(): void;
}

export interface SubscribeOptions {
  /** Deliver events strictly after this position; null means from the very beginning. */
  from: Position | null;
  /** Called with batches in commit order; the next batch waits until this one resolves. */
  handle(batch: RecordedEvent[]): Promise<void>;
  /** Called when `handle` or a read fails; the subscription retries after a pause. */
  onError?(error: unknown): void;
  batchSize?: number;
  /**
   * Reads at most this often while appends keep coming (default: a few milliseconds). A
   * subscriber that need not keep up closely reads the appends of a longer while at once. A
   * function is asked before each wait: a subscriber may keep up closely only while someone
   * waits on it, and `hurry` ends a wait it no longer wants.
   */
  readIntervalMs?: number | (() => number);
  /**
   * Only events of these types are handed to `handle`; the subscription moves past the others
   * without reading their data. Default: every event. A reactor that acts on a few types of a busy
   * log would otherwise parse every event the projections already parse.
   */
  types?: readonly string[];
  /**
   * Told after each read that found anything, once `handle` is done with what it handed over: the
   * position of the last event read (of `types` or not) and how many were read. A checkpoint kept
   * here moves past the events of other types too.
   */
  read?(to: Position, events: number): Promise<void>;
}

/** What one read of the global log found: the events asked for, and how far it looked. */
export interface LogPage {
  events: RecordedEvent[];
  /** Events looked at, handed over or not: as many as the limit means more may be waiting. */
  scanned: number;
  /** The position of the last event looked at; null when there was none. */
  last: Position | null;
}

/** A page of every event read (readAll), narrowed to `types` when given. */
export function pageOf(events: RecordedEvent[], types?: readonly string[]): LogPage {
  return {
    events: types ? events.filter((event) => types.includes(event.type)) : events,
    scanned: events.length,
    last: events.at(-1)?.position ?? null,
  };
}

export interface StreamRead {
  streamId: string;
  fromRevision: number;
}

export interface EventStore {
  /** Appends to one stream; throws WrongExpectedVersionError when `expected` does not hold. */
  append(streamId: string, expected: ExpectedVersion, events: EventToAppend[]): Promise<AppendResult>;
  /** Appends to several streams in one atomic commit: all or nothing. Returns the last position. */
  appendMany(appends: StreamAppend[]): Promise<{ position: Position }>;
  /** The events of one stream from `fromRevision` (default 0) in revision order; [] when there are none. */
  readStream(streamId: string, fromRevision?: number): Promise<RecordedEvent[]>;
  /** Several different streams' events at once, each as readStream gives them, in the order asked for. */
  readStreams(reads: StreamRead[]): Promise<RecordedEvent[][]>;
  /** Up to `limit` events after `from`, in commit order, never skipping one committed later. */
  readAll(from: Position | null, limit: number): Promise<RecordedEvent[]>;
  /** Position of the newest event a reader can see, or null for an empty log. */
  headPosition(): Promise<Position | null>;
  /**
   * Position of the newest committed event, whether or not readers can see it yet (on PostgreSQL
   * an older transaction still open hides it from them for a moment), or null for an empty log.
   */
  committedPosition(): Promise<Position | null>;
  /** A catch-up subscription to the global log. */
  subscribe(options: SubscribeOptions): Subscription;
  /**
   * How many appends by other processes this process has heard of so far, or null when it cannot
   * tell (another process may be appending unheard). A stream read while this was n has had no
   * other writer since, as long as it is still n: the commands trust the states they remember on
   * that (src/command-handlers/snapshots.ts). News of another process's append takes a few milliseconds.
   */
  foreignAppends(): number | null;
  /** Answers when the store is reachable. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export class WrongExpectedVersionError extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedVersion,
    readonly actual: number | null,
  ) {
    super(`stream ${streamId}: expected version ${String(expected)}, found ${actual ?? "no stream"}`);
    this.name = "WrongExpectedVersionError";
  }
}

export function isAfter(a: Position, b: Position | null): boolean {
  return b === null || a > b;
}
