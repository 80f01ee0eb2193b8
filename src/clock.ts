/** The service's one clock. Everything that needs the time asks it, so the test clock moves it all. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** The system clock plus an offset that only grows: `POST /v1/admin/clock` with TEST_CLOCK=1. */
export class AdjustableClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(seconds: number): Date {
    this.offsetMs += seconds * 1000;
    return this.now();
  }
}
