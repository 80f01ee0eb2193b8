/**
 * An event as the log keeps it: its stream, revision and place in the global order, and the
 * metadata every event carries. The event store adapters write and read it; projections fold it.
 */

export const ACTOR_KINDS = [
  "api_key",
  "session",
  "connection_token",
  "admin",
  "system",
  "signed_url",
] as const;
export type ActorKind = (typeof ACTOR_KINDS)[number];

/** The metadata version written now. */
export const METADATA_VERSION = 2;

/**
 * The metadata every event carries (decisions 6.1): when it happened and who caused it. Version 2
 * added the actor's kind and the request id; events written before it are read through
 * `upcastMetadata` (src/eventstore/metadata.ts), which fills both in from what a version-1 event
 * could say.
 */
export interface EventMetadata {
  schemaVersion: number;
  occurredAt: string;
  actorKind: ActorKind;
  accountId: string | null;
  keyId: string | null;
  agentId: string | null;
  requestId: string | null;
}

/**
 * A place in the global log. Opaque to callers except for ordering: positions of one store
 * compare with plain string comparison, in commit order.
 */
export type Position = string;

export interface RecordedEvent {
  eventId: string;
  streamId: string;
  /** 0-based revision of this event inside its stream. */
  revision: number;
  type: string;
  data: Record<string, unknown>;
  /**
   * The data as the store holds it, present only when reading lifted it to a newer shape
   * (src/eventstore/upcast.ts): what the transparency log hashes (decisions 9.1).
   */
  storedData?: Record<string, unknown>;
  metadata: EventMetadata;
  position: Position;
}
