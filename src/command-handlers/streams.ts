import { randomUUID } from "node:crypto";
import { type Decider, type Decision, DomainError, fold } from "../../domain/decider.js";
import { type ActorKind, METADATA_VERSION } from "../../domain/recorded-event.js";
import {
  type EventMetadata,
  type EventStore,
  type EventToAppend,
  type ExpectedVersion,
  NO_STREAM,
  type RecordedEvent,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../eventstore/port.js";
import type { CommandDeps } from "./deps.js";
import type { Mark, Snapshot } from "./snapshots.js";

export type DomainEvent = { type: string; data: object };

/** One aggregate's stream as read for a decision: its folded state and the version to expect. */
export interface Loaded<State> {
  streamId: string;
  state: State;
  expected: ExpectedVersion;
}

export type Evolving<State, Event> = Pick<Decider<never, Event, State, never>, "initialState" | "evolve">;

const asEvent = <Event>(e: RecordedEvent) => ({ type: e.type, data: e.data }) as unknown as Event;

export async function load<State, Event extends DomainEvent>(
  store: EventStore,
  decider: Evolving<State, Event>,
  streamId: string,
): Promise<Loaded<State>> {
  const recorded = await store.readStream(streamId);
  const last = recorded[recorded.length - 1];
  return {
    streamId,
    state: fold(decider, recorded.map(asEvent<Event>)),
    expected: last ? last.revision : NO_STREAM,
  };
}

/** A stream loaded through the remembered states (`kind`: the state's shape). */
export interface Snapshotted<State> extends Loaded<State> {
  kind: string;
  /** When it was loaded: what the state kept after an append on it is current as of. */
  mark: Mark;
  /** Whether its states are stored in the snapshot table, or only remembered. */
  stored: boolean;
}

/** What loadSnapshotted loads: a stream, its decider's fold and its state's kind. */
export interface SnapshottedStream<State, Event extends DomainEvent> {
  decider: Evolving<State, Event>;
  kind: string;
  streamId: string;
  /**
   * A stream that stays short (a transfer's): remembered, never stored in the snapshot table, so
   * that loading one this process does not remember costs one read of the log.
   */
  short?: boolean;
}

type SnapshotDeps = Pick<CommandDeps, "store" | "snapshots">;

/**
 * Loads a stream as a command decides on it: the state this process remembers when it is current
 * (SnapshotStore), else folded from the latest snapshot and the events after it, and kept (an
 * account's stream gains an event with every API key without being loaded this way, so a load may
 * be the first to see 50 new events).
 */
export async function loadSnapshotted<State, Event extends DomainEvent>(
  deps: SnapshotDeps,
  stream: SnapshottedStream<State, Event>,
): Promise<Snapshotted<State>> {
  const [loaded] = await loadSnapshottedAll(deps, [stream]);
  if (!loaded) throw new Error(`${stream.streamId} not loaded`);
  return loaded;
}

/** Two snapshotted streams loaded as loadSnapshotted would, with at most one read of the log for both. */
export async function loadSnapshottedPair<A, EventA extends DomainEvent, B, EventB extends DomainEvent>(
  deps: SnapshotDeps,
  first: SnapshottedStream<A, EventA>,
  second: SnapshottedStream<B, EventB>,
): Promise<[Snapshotted<A>, Snapshotted<B>]> {
  const [a, b] = await loadSnapshottedAll(deps, [first, second] as SnapshottedStream<unknown, DomainEvent>[]);
  if (!a || !b) throw new Error(`${first.streamId} and ${second.streamId} not loaded`);
  return [a as Snapshotted<A>, b as Snapshotted<B>];
}

async function loadSnapshottedAll<State, Event extends DomainEvent>(
  deps: SnapshotDeps,
  wanted: SnapshottedStream<State, Event>[],
): Promise<Snapshotted<State>[]> {
  const mark = deps.snapshots.mark();
  const starts = await Promise.all(
    wanted.map(async ({ streamId, kind, short }) => {
      const current = deps.snapshots.current<State>(streamId, kind);
      if (current) return { current, snapshot: current };
      return { current: null, snapshot: short ? null : await deps.snapshots.read<State>(streamId, kind) };
    }),
  );
  const unread = wanted.flatMap((stream, i) =>
    starts[i]?.current
      ? []
      : [{ streamId: stream.streamId, fromRevision: (starts[i]?.snapshot?.revision ?? -1) + 1 }],
  );
  const recorded = unread.length === 0 ? [] : await deps.store.readStreams(unread);
  let next = 0;
  return Promise.all(
    wanted.map((stream, i) => {
      const start = starts[i];
      const events = start?.current ? [] : (recorded[next++] ?? []);
      return foldAfter(deps, stream, mark, start?.snapshot ?? null, events);
    }),
  );
}

async function foldAfter<State, Event extends DomainEvent>(
  deps: Pick<CommandDeps, "snapshots">,
  { decider, kind, streamId, short = false }: SnapshottedStream<State, Event>,
  mark: Mark,
  snapshot: Snapshot<State> | null,
  recorded: RecordedEvent[],
): Promise<Snapshotted<State>> {
  const state = recorded
    .map(asEvent<Event>)
    .reduce(decider.evolve, snapshot?.state ?? decider.initialState());
  const last = recorded.at(-1)?.revision ?? snapshot?.revision;
  const stored = !short;
  if (last !== undefined)
    await deps.snapshots.keep(streamId, kind, { revision: last, state }, mark, { stored });
  return { streamId, state, expected: last ?? NO_STREAM, kind, mark, stored };
}

/** After an append to a snapshotted stream: keeps the state it now has. */
export async function keepSnapshot<State, Event extends DomainEvent>(
  deps: Pick<CommandDeps, "snapshots">,
  decider: Evolving<State, Event>,
  loaded: Snapshotted<State>,
  events: Event[],
): Promise<void> {
  if (events.length === 0) return;
  const revision = (typeof loaded.expected === "number" ? loaded.expected : -1) + events.length;
  const state = events.reduce(decider.evolve, loaded.state);
  await deps.snapshots.keep(loaded.streamId, loaded.kind, { revision, state }, loaded.mark, {
    stored: loaded.stored,
  });
}

/** Who caused a change: recorded in every event's metadata for audits. */
export interface Actor {
  kind: ActorKind;
  accountId: string | null;
  keyId: string | null;
  agentId?: string | null;
  /** The HTTP request behind the change (its X-Request-Id), when there was one. */
  requestId?: string | null;
}

/** The service acting on its own (housekeeping: expiry, clean-up). */
export const SYSTEM_ACTOR: Actor = { kind: "system", accountId: null, keyId: null };

export function toAppend(
  loaded: Pick<Loaded<unknown>, "streamId" | "expected">,
  events: DomainEvent[],
  actor: Actor,
  now: string,
): StreamAppend {
  const metadata: EventMetadata = {
    schemaVersion: METADATA_VERSION,
    occurredAt: now,
    actorKind: actor.kind,
    accountId: actor.accountId,
    keyId: actor.keyId,
    agentId: actor.agentId ?? null,
    requestId: actor.requestId ?? null,
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
