import { randomUUID } from "node:crypto";
import { METADATA_VERSION } from "../../domain/recorded-event.js";
import type { EventToAppend } from "../../src/eventstore/port.js";

/** An event of no domain meaning, as the system would record it: what tests of the log itself append. */
export function noteEvent(data: Record<string, unknown>): EventToAppend {
  return {
    eventId: randomUUID(),
    type: "NoteWritten",
    data,
    metadata: {
      schemaVersion: METADATA_VERSION,
      occurredAt: new Date().toISOString(),
      actorKind: "system",
      accountId: null,
      keyId: null,
      agentId: null,
      requestId: null,
    },
  };
}
