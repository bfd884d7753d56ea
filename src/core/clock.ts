/** The clock every stateful piece reads, so tests can inject time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still until it is set (`t = …`) or advanced: the one fake clock of the tests. */
export interface ManualClock extends Clock {
  /** The time it reads, in ms since the epoch; assign to jump. */
  t: number;
  /** Moves it forward by `ms`; returns the new time. */
  advance(ms: number): number;
}

/** A ManualClock reading `start` (ms since the epoch, or an ISO date-time). */
export function manualClock(start: number | string): ManualClock {
  // A closure, not `this`: code under test may hold `clock.now` detached.
  let t = typeof start === 'string' ? Date.parse(start) : start;
  return {
    get t() {
      return t;
    },
    set t(v: number) {
      t = v;
    },
    now: () => t,
    advance: (ms) => (t += ms),
  };
}
