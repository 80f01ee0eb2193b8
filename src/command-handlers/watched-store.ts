import {
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpectedVersion,
  NO_STREAM,
  type Position,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../eventstore/port.js";
import type { SnapshotStore } from "./snapshots.js";

/**
 * The event store as this process's commands, reactors and housekeeping use it: every append
 * tells the remembered states which revision it took each stream to, so no code path that
 * appends without keeping the new state leaves an old one looking current.
 */
export class WatchedEventStore implements EventStore {
  constructor(
    private readonly store: EventStore,
    private readonly snapshots: SnapshotStore,
  ) {}

  async append(streamId: string, expected: ExpectedVersion, events: EventToAppend[]): Promise<AppendResult> {
    return this.watch([{ streamId, expected, events }], () => this.store.append(streamId, expected, events));
  }

  appendMany(appends: StreamAppend[]): Promise<{ position: Position }> {
    return this.watch(appends, () => this.store.appendMany(appends));
  }

  readStream: EventStore["readStream"] = (...args) => this.store.readStream(...args);
  readStreams: EventStore["readStreams"] = (...args) => this.store.readStreams(...args);
  readAll: EventStore["readAll"] = (...args) => this.store.readAll(...args);
  headPosition: EventStore["headPosition"] = () => this.store.headPosition();
  committedPosition: EventStore["committedPosition"] = () => this.store.committedPosition();
  subscribe: EventStore["subscribe"] = (options) => this.store.subscribe(options);
  foreignAppends: EventStore["foreignAppends"] = () => this.store.foreignAppends();
  ping: EventStore["ping"] = () => this.store.ping();
  close: EventStore["close"] = () => this.store.close();

  private async watch<T>(appends: StreamAppend[], append: () => Promise<T>): Promise<T> {
    try {
      const result = await append();
      for (const { streamId, expected, events } of appends) {
        const before = revisionOf(expected);
        if (before === null) this.snapshots.blind();
        else this.snapshots.appended(streamId, before + events.length);
      }
      return result;
    } catch (error) {
      // A conflict committed nothing and names where the stream really is; any other failure may
      // or may not have committed.
      if (!(error instanceof WrongExpectedVersionError)) this.snapshots.blind();
      else if (error.actual !== null) this.snapshots.appended(error.streamId, error.actual);
      throw error;
    }
  }
}

/** The revision an append expects its stream at; null for ANY (unknown). */
function revisionOf(expected: ExpectedVersion): number | null {
  if (expected === NO_STREAM) return -1;
  return typeof expected === "number" ? expected : null;
}
