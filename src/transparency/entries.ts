import type { LogEntry } from "@handoff/sdk/transparency";
import type { RecordedEvent } from "../eventstore/port.js";

/** An event as a leaf of the log (decisions 9.1): its data exactly as stored, personal data sealed. */
export function entryOf(event: RecordedEvent): LogEntry {
  return {
    position: event.position,
    type: event.type,
    stream: event.streamId,
    at: event.metadata.occurredAt,
    data: event.storedData ?? event.data,
  };
}
