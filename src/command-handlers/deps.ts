import type { Clock } from "../clock.js";
import type { EventStore } from "../eventstore/port.js";
import type { PersonalData } from "../privacy/personal-data.js";
import type { SnapshotStore } from "./snapshots.js";
import type { StreamSerializer } from "./stream-lock.js";

/** What every command handler needs: where events go, what time it is, and the key that seals secrets. */
export interface CommandDeps {
  store: EventStore;
  clock: Clock;
  serverKey: Buffer;
  snapshots: SnapshotStore;
  /** The per-person data keys that personal data in events is sealed under (decisions 6.5). */
  people: PersonalData;
  /** Runs this process's decisions on one stream one at a time (StreamLock). */
  streamLock: StreamSerializer;
}
