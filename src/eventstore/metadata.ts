import { ACTOR_KINDS, type ActorKind, type EventMetadata } from "../../domain/recorded-event.js";

/** Version-1 events the operator caused through the admin API (they carried no key id). */
const ADMIN_TYPES = new Set([
  "AccountCreated",
  "AccountEmailClaimed",
  "AccountPlanChanged",
  "BroadcastPublished",
]);

/**
 * Version 1 recorded no actor kind: an event with a key id came through an API key; an agent's
 * connection through its connection token; account creation, plan changes and broadcasts from the
 * operator; anything else with no key was the service itself (housekeeping).
 */
function kindOfVersion1(type: string, keyId: unknown): ActorKind {
  if (typeof keyId === "string") return "api_key";
  if (type === "AgentConnected") return "connection_token";
  if (ADMIN_TYPES.has(type)) return "admin";
  return "system";
}

const text = (value: unknown): string | null => (typeof value === "string" ? value : null);

/** Any stored metadata, of any version, in the current shape. */
export function upcastMetadata(type: string, stored: Record<string, unknown>): EventMetadata {
  const kind = (ACTOR_KINDS as readonly unknown[]).includes(stored.actorKind)
    ? (stored.actorKind as ActorKind)
    : kindOfVersion1(type, stored.keyId);
  return {
    schemaVersion: typeof stored.schemaVersion === "number" ? stored.schemaVersion : 1,
    occurredAt: text(stored.occurredAt) ?? "1970-01-01T00:00:00.000Z",
    actorKind: kind,
    accountId: text(stored.accountId),
    keyId: text(stored.keyId),
    agentId: text(stored.agentId),
    requestId: text(stored.requestId),
  };
}
