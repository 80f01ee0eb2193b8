import type { Decider } from "../../domain/decider.js";
import {
  NO_STREAM,
  type Position,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../eventstore/port.js";
import type { CommandDeps } from "./deps.js";
import {
  type Actor,
  accepted,
  appendAll,
  type DomainEvent,
  type Evolving,
  keepSnapshot,
  type Loaded,
  load,
  loadSnapshotted,
  loadSnapshottedPair,
  retryOnConflict,
  type Snapshotted,
  type SnapshottedStream,
  toAppend,
} from "./streams.js";

/**
 * One attempt of a command: what it loads, decides and records. Everything recorded goes in one
 * atomic append at the versions loaded, after the handler's decision returns.
 */
export interface Turn {
  /** The attempt's time: read from the clock when first asked, then the same for every event. */
  now(): Date;
  /** now() as events carry it. */
  at(): string;
  /** A stream folded from the log. */
  load<State, Event extends DomainEvent>(
    decider: Evolving<State, Event>,
    streamId: string,
  ): Promise<Loaded<State>>;
  /** A stream loaded through the remembered states; the state it has after the append is kept. */
  loadSnapshotted<State, Event extends DomainEvent>(
    stream: SnapshottedStream<State, Event>,
  ): Promise<Snapshotted<State>>;
  /** Two such streams, with at most one read of the log for both. */
  loadSnapshottedPair<A, EventA extends DomainEvent, B, EventB extends DomainEvent>(
    first: SnapshottedStream<A, EventA>,
    second: SnapshottedStream<B, EventB>,
  ): Promise<[Snapshotted<A>, Snapshotted<B>]>;
  /** A stream that must not exist yet: its decider's initial state, appended create-only. */
  newStream<State>(decider: Pick<Evolving<State, never>, "initialState">, streamId: string): Loaded<State>;
  /**
   * Decides a command on a stream as loaded and records the events; throws the refusal (a
   * DomainError, which the HTTP edge maps). `actor` overrides the handler's for these events.
   */
  decide<Command, Event extends DomainEvent, State, Context>(
    decider: Decider<Command, Event, State, Context>,
    stream: Loaded<State>,
    command: Command,
    context: Context,
    actor?: Actor,
  ): Event[];
  /**
   * Records events on a stream in this attempt's append; what is recorded on one stream, in one
   * or several calls, goes in one append in order. `at`: their time, the attempt's by default.
   */
  record(
    stream: Pick<Loaded<unknown>, "streamId" | "expected">,
    events: DomainEvent[],
    actor?: Actor,
    at?: string,
  ): void;
  /** Adds a stream's append decided elsewhere (a transfer's change that joins its sender's books). */
  include(append: StreamAppend): void;
  /** Has another writer record this attempt's appends (the books' turn), instead of appending them here. */
  commitThrough(commit: (appends: StreamAppend[]) => Promise<Position | null>): void;
}

/** How a command is run. */
export interface Handling<Decided> {
  /** Who acts: recorded in the metadata of every event the command records unless it names another. */
  actor?: Actor;
  /**
   * A hot stream: this process's decisions on it take turns (StreamLock) instead of racing each
   * other into conflicts; other processes still meet at the expected version.
   */
  lock?: string;
  /** How many attempts a command may take before a conflict is thrown (retryOnConflict's default). */
  attempts?: number;
  /** Told of a conflict on the append, with what the attempt decided, before it starts over. */
  onConflict?(error: WrongExpectedVersionError, decided: NoInfer<Decided>): void;
}

type HandleDeps = Pick<CommandDeps, "store" | "clock" | "snapshots" | "streamLock">;

/**
 * The one shape of a command handler: load the streams a decision needs, decide, and append what
 * was decided, over however many streams, in one atomic append at the versions loaded. When
 * another writer changed one of them in between (WrongExpectedVersionError) the whole attempt
 * runs again from the load, so the second decision sees the first writer's events (a taken slug,
 * a used-up quota). Answers what `decide` returned and where the append ended (null when nothing
 * was recorded).
 */
export function handle<Decided extends object>(
  deps: HandleDeps,
  handling: Handling<Decided>,
  decide: (turn: Turn) => Promise<Decided>,
): Promise<Decided & { position: Position | null }> {
  const run = () =>
    retryOnConflict(async () => {
      const attempt = new Attempt(deps, handling.actor);
      const decided = await decide(attempt);
      const position = await attempt.commit((error) => handling.onConflict?.(error, decided));
      return { ...decided, position };
    }, handling.attempts);
  return handling.lock ? deps.streamLock.run(handling.lock, run) : run();
}

interface Watched {
  decider: Evolving<unknown, DomainEvent>;
  loaded: Snapshotted<unknown>;
}

class Attempt implements Turn {
  private time: Date | null = null;
  /** One append per stream, in the order the streams were first recorded on. */
  private readonly appends = new Map<string, StreamAppend>();
  /** The domain events recorded per stream, for the states kept after the append. */
  private readonly decided = new Map<string, DomainEvent[]>();
  private readonly watched: Watched[] = [];
  private through: ((appends: StreamAppend[]) => Promise<Position | null>) | null = null;

  constructor(
    private readonly deps: HandleDeps,
    private readonly actor: Actor | undefined,
  ) {}

  now(): Date {
    this.time ??= this.deps.clock.now();
    return this.time;
  }

  at(): string {
    return this.now().toISOString();
  }

  load<State, Event extends DomainEvent>(decider: Evolving<State, Event>, streamId: string) {
    return load(this.deps.store, decider, streamId);
  }

  async loadSnapshotted<State, Event extends DomainEvent>(stream: SnapshottedStream<State, Event>) {
    const loaded = await loadSnapshotted(this.deps, stream);
    this.watch(stream, loaded);
    return loaded;
  }

  async loadSnapshottedPair<A, EventA extends DomainEvent, B, EventB extends DomainEvent>(
    first: SnapshottedStream<A, EventA>,
    second: SnapshottedStream<B, EventB>,
  ): Promise<[Snapshotted<A>, Snapshotted<B>]> {
    const [a, b] = await loadSnapshottedPair(this.deps, first, second);
    this.watch(first, a);
    this.watch(second, b);
    return [a, b];
  }

  newStream<State>(decider: Pick<Evolving<State, never>, "initialState">, streamId: string): Loaded<State> {
    return { streamId, state: decider.initialState(), expected: NO_STREAM };
  }

  decide: Turn["decide"] = (decider, stream, command, context, actor) => {
    const events = accepted(decider.decide(command, stream.state, context));
    this.record(stream, events, actor);
    return events;
  };

  record(
    stream: Pick<Loaded<unknown>, "streamId" | "expected">,
    events: DomainEvent[],
    actor: Actor | undefined = this.actor,
    at = this.at(),
  ): void {
    if (!actor) throw new Error(`events for ${stream.streamId} recorded without an actor`);
    const append = toAppend(stream, events, actor, at);
    const earlier = this.appends.get(stream.streamId);
    if (earlier) earlier.events.push(...append.events);
    else this.appends.set(stream.streamId, append);
    const decided = this.decided.get(stream.streamId);
    if (decided) decided.push(...events);
    else this.decided.set(stream.streamId, [...events]);
  }

  include(append: StreamAppend): void {
    this.appends.set(append.streamId, append);
  }

  commitThrough(commit: (appends: StreamAppend[]) => Promise<Position | null>): void {
    this.through = commit;
  }

  /** Appends what was recorded, then keeps the new states of the remembered streams. */
  async commit(onConflict: (error: WrongExpectedVersionError) => void): Promise<Position | null> {
    const appends = [...this.appends.values()];
    let position: Position | null;
    try {
      position = this.through ? await this.through(appends) : await appendAll(this.deps.store, appends);
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) onConflict(error);
      throw error;
    }
    for (const { decider, loaded } of this.watched) {
      await keepSnapshot(this.deps, decider, loaded, this.decided.get(loaded.streamId) ?? []);
    }
    return position;
  }

  private watch<State, Event extends DomainEvent>(
    stream: SnapshottedStream<State, Event>,
    loaded: Snapshotted<State>,
  ): void {
    this.watched.push({
      decider: stream.decider as unknown as Evolving<unknown, DomainEvent>,
      loaded: loaded as Snapshotted<unknown>,
    });
  }
}
