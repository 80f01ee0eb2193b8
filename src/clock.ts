/** The service's one clock. Everything that needs the time asks it, so the test clock moves it all. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The system clock plus an offset that only grows: `POST /v1/admin/clock` with TEST_CLOCK=1. */
export class AdjustableClock implements Clock {
  private offsetMs = 0;
  private listeners = new Set<() => void>();

  /** Calls `listener` after every move, so timers that wait on the clock look again. */
  onAdvance(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(seconds: number): Date {
    this.offsetMs += seconds * 1000;
    for (const listener of this.listeners) listener();
    return this.now();
  }
}
