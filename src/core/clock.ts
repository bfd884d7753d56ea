/** The clock every stateful piece reads, so tests can inject time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
