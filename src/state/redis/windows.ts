/**
 * The cluster-wide limit windows on Redis: one Lua script per check (./scripts.ts), reading
 * the clock with TIME, so every instance counts against the same windows and clocks do not
 * matter. Keys: P{rl:<subject>}:m (minute log, expires after 61 s idle) and :d (day counter,
 * expires an hour after its UTC day ends); P{reg:<subject>} for the registration window.
 */
import type { RateWindowsState, SharedWindows, SlideState } from '../types.js';
import type { ScriptedRedis } from './scripts.js';

/** What the windows need of the store (RedisStore): its key layout and its scripted connection. */
export interface ScriptRunner {
  /** The key of something shared that is not a collection. */
  key(...parts: string[]): string;
  /** Runs `fn` on the connection; StoreError UNAVAILABLE when Redis cannot be reached. */
  run<T>(what: string, fn: (r: ScriptedRedis) => Promise<T>): Promise<T>;
}

let seq = 0;

export class RedisWindows implements SharedWindows {
  constructor(readonly store: ScriptRunner) {}

  async rate(subject: string, perMinute: number, perDay: number, consume: boolean): Promise<RateWindowsState> {
    const m = this.store.key(`rl:${subject}`, 'm');
    const d = this.store.key(`rl:${subject}`, 'd');
    const r = (await this.store.run('rate limit', (c: ScriptedRedis) => c.dtbRate(2, m, d, String(perMinute), String(perDay), consume ? '1' : '0'))) as [number, string, number, string, string, number];
    return { allowed: r[0] === 1, now: Number(r[1]), minuteUsed: Number(r[2]), first: Number(r[3]), oldestCounted: Number(r[4]), dayUsed: Number(r[5]) };
  }

  async slide(subject: string, limit: number, windowMs: number): Promise<SlideState> {
    const k = this.store.key(`reg:${subject}`);
    const member = `${process.pid}.${++seq}.${Math.random().toString(36).slice(2, 8)}`;
    const r = (await this.store.run('rate limit', (c: ScriptedRedis) => c.dtbSlide(1, k, String(limit), String(windowMs), member))) as [number, string, number, string, string];
    return { allowed: r[0] === 1, now: Number(r[1]), used: Number(r[2]), oldestCounted: Number(r[3]), first: Number(r[4]) };
  }
}
