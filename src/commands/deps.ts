import type { Clock } from "../clock.js";
import type { EventStore } from "../eventstore/port.js";
import type { SnapshotStore } from "./snapshots.js";

/** What every command handler needs: where events go, what time it is, and the key that seals secrets. */
export interface CommandDeps {
  store: EventStore;
  clock: Clock;
  serverKey: Buffer;
  snapshots: SnapshotStore;
}
