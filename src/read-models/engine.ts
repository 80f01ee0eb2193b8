import type { Knex } from "knex";
import type { Projection } from "../../projections/projection.js";
import type { EventStore, Position } from "../eventstore/port.js";
import { isAfter } from "../eventstore/port.js";
import { Projector } from "./projector.js";

export interface RebuildProgress {
  projection: string;
  events: number;
  done: boolean;
}

const REBUILD_BATCH = 1000;

/** Runs every projection, and lets a writer wait until its events are visible in the read models. */
export class ProjectionEngine {
  readonly projectors: Projector[];

  constructor(
    projections: Projection[],
    private readonly store: EventStore,
    private readonly db: Knex,
    onError: (error: unknown) => void,
  ) {
    this.projectors = projections.map((projection) => new Projector(projection, store, db, onError));
  }

  async start(): Promise<void> {
    await Promise.all(this.projectors.map((projector) => projector.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(this.projectors.map((projector) => projector.stop()));
  }

  /** Names of the projections that have not yet applied everything up to `position`. */
  behind(position: Position | null): string[] {
    if (position === null) return [];
    return this.projectors.filter((p) => isAfter(position, p.position)).map((p) => p.projection.name);
  }

  /**
   * Read-your-writes: resolves true once every projection has applied `position`, or false after
   * `timeoutMs` (the write stands either way; only its visibility is late).
   */
  waitFor(position: Position | null, timeoutMs: number): Promise<boolean> {
    if (this.behind(position).length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const unsubscribes: (() => void)[] = [];
      const finish = (result: boolean) => {
        clearTimeout(timer);
        for (const unsubscribe of unsubscribes) unsubscribe();
        resolve(result);
      };
      const timer = setTimeout(() => finish(false), timeoutMs);
      for (const projector of this.projectors) {
        unsubscribes.push(projector.onAdvance(() => this.behind(position).length === 0 && finish(true)));
      }
    });
  }

  /** Calls `listener` whenever the named projection applies a batch. */
  onAdvance(name: string, listener: () => void): () => void {
    const projector = this.projectors.find((p) => p.projection.name === name);
    if (!projector) throw new Error(`unknown projection ${name}`);
    return projector.onAdvance(listener);
  }

  async headPosition(): Promise<Position | null> {
    return this.store.headPosition();
  }

  /**
   * Empties one projection's tables and refills them from the whole log. Meant for a stopped
   * service; on PostgreSQL a running instance notices the moved checkpoint and follows.
   */
  async rebuild(name: string, progress: (p: RebuildProgress) => void): Promise<void> {
    const projector = this.projectors.find((p) => p.projection.name === name);
    if (!projector) throw new Error(`unknown projection ${name}`);
    const { projection } = projector;
    await this.db.transaction(async (trx) => {
      for (const table of projection.tables) await trx.raw("truncate table ??", [table]);
      await trx("projection_checkpoints").where({ name }).del();
    });
    let position: Position | null = null;
    let events = 0;
    for (;;) {
      const batch = await this.store.readAll(position, REBUILD_BATCH);
      if (batch.length === 0) break;
      await projector.applyBatch(position, batch);
      position = batch[batch.length - 1]?.position ?? position;
      events += batch.length;
      progress({ projection: name, events, done: false });
    }
    progress({ projection: name, events, done: true });
  }
}
