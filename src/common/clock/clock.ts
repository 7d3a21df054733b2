/**
 * Port: the time that decides something (deadlines, expiries, timers, schedules). Everything that
 * compares with "now" to decide asks this, so a test moves time with a FakeClock instead of
 * sleeping. Not for measuring durations (performance.now) or for timers of the process itself
 * (setTimeout/setInterval still run in real time: they only make a poll happen, the clock decides
 * whether anything is due).
 */
export abstract class Clock {
  /** Epoch milliseconds. */
  abstract now(): number;

  date(): Date {
    return new Date(this.now());
  }
}

/** The real clock. */
export class SystemClock extends Clock {
  now(): number {
    return Date.now();
  }
}

/**
 * A clock a test moves. Starts at `start` (default: the real time now) and then stands still:
 * `advance(ms)` / `set(at)` move it; time never runs by itself, so "is it due" is exact.
 */
export class FakeClock extends Clock {
  private t: number;

  constructor(start: number | Date = Date.now()) {
    super();
    this.t = typeof start === 'number' ? start : start.getTime();
  }

  now(): number {
    return this.t;
  }

  advance(ms: number): number {
    if (!(ms >= 0)) throw new Error(`a clock only moves forward (advance(${ms}))`);
    this.t += ms;
    return this.t;
  }

  set(at: number | Date): number {
    const next = typeof at === 'number' ? at : at.getTime();
    if (next < this.t) throw new Error('a clock only moves forward');
    this.t = next;
    return this.t;
  }
}
