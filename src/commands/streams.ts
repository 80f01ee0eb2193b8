import { randomUUID } from "node:crypto";
import { type Decider, type Decision, DomainError, fold } from "../../domain/decider.js";
import {
  type EventMetadata,
  type EventStore,
  type EventToAppend,
  type ExpectedVersion,
  NO_STREAM,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../eventstore/port.js";

type DomainEvent = { type: string; data: object };

/** One aggregate's stream as read for a decision: its folded state and the version to expect. */
export interface Loaded<State> {
  streamId: string;
  state: State;
  expected: ExpectedVersion;
}

export async function load<State, Event extends DomainEvent>(
  store: EventStore,
  decider: Pick<Decider<never, Event, State, never>, "initialState" | "evolve">,
  streamId: string,
): Promise<Loaded<State>> {
  const recorded = await store.readStream(streamId);
  const events = recorded.map((e) => ({ type: e.type, data: e.data }) as unknown as Event);
  const last = recorded[recorded.length - 1];
  return { streamId, state: fold(decider, events), expected: last ? last.revision : NO_STREAM };
}

/** Who caused a change: recorded in every event's metadata for audits. */
export interface Actor {
  accountId: string | null;
  keyId: string | null;
  agentId?: string | null;
}

export function toAppend(
  loaded: Pick<Loaded<unknown>, "streamId" | "expected">,
  events: DomainEvent[],
  actor: Actor,
  now: string,
): StreamAppend {
  const metadata: EventMetadata = {
    schemaVersion: 1,
    occurredAt: now,
    accountId: actor.accountId,
    keyId: actor.keyId,
    agentId: actor.agentId ?? null,
  };
  const toStore: EventToAppend[] = events.map((event) => ({
    eventId: randomUUID(),
    type: event.type,
    data: event.data as Record<string, unknown>,
    metadata,
  }));
  return { streamId: loaded.streamId, expected: loaded.expected, events: toStore };
}

/** The events of a decision, or the refusal thrown for the HTTP edge to map. */
export function accepted<Event>(decision: Decision<Event>): Event[] {
  if (decision instanceof DomainError) throw decision;
  return decision;
}

/** Appends only the streams that have something to record. */
export async function appendAll(store: EventStore, appends: StreamAppend[]): Promise<string | null> {
  const nonEmpty = appends.filter((a) => a.events.length > 0);
  if (nonEmpty.length === 0) return null;
  const { position } = await store.appendMany(nonEmpty);
  return position;
}

const DEFAULT_ATTEMPTS = 30;
const MAX_BACKOFF_MS = 50;

/**
 * Runs load → decide → append again when another writer got in between: the retry re-reads the
 * streams, so the second decision sees the first writer's events (a taken slug, a used quota).
 */
export async function retryOnConflict<T>(attempt: () => Promise<T>, attempts = DEFAULT_ATTEMPTS): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError) || tries >= attempts) throw error;
      await new Promise((resolve) =>
        setTimeout(resolve, Math.random() * Math.min(MAX_BACKOFF_MS, 5 * tries)),
      );
    }
  }
}
