/**
 * The cluster-wide limit windows on Redis: one Lua script per check (./scripts.ts), reading
 * the clock with TIME, so every instance counts against the same windows and clocks do not
 * matter. Keys: P{rl:<subject>}:m (minute log, expires after 61 s idle) and :d (day counter,
 * expires an hour after its UTC day ends); P{reg:<subject>} for the registration window.
 *
 * The hot path (issue 37): the calls of one subject that arrive in the same turn of the event
 * loop are checked by ONE script call (`calls` = how many), which takes them in arrival order
 * as if they had come one after another — the same answers, one round trip and one script run
 * instead of n. See docs/scale-out.md "Hot path".
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

/** The script's answer: admitted, now, minute and day counts before, first and oldest-counted times. */
type RateReply = [number, string, number, number, string, string];

interface Waiter {
  resolve: (s: RateWindowsState) => void;
  reject: (err: unknown) => void;
}

/** The calls of one subject (and limits) waiting for the next script call. */
interface Batch {
  subject: string;
  perMinute: number;
  perDay: number;
  waiters: Waiter[];
}

/** Most calls one script call takes (Lua's unpack() has a stack limit; ZADD gets 2 args per call). */
export const MAX_BATCH = 512;

let seq = 0;

export class RedisWindows implements SharedWindows {
  /** Batches of this turn, by subject and limits (a plan change mid-turn starts its own batch). */
  #pending = new Map<string, Batch>();
  #scheduled = false;

  constructor(readonly store: ScriptRunner) {}

  rate(subject: string, perMinute: number, perDay: number, consume: boolean): Promise<RateWindowsState> {
    if (!consume) return this.#run(subject, perMinute, perDay, 0).then((r) => stateOf(r, 0, perMinute, perDay));
    return new Promise<RateWindowsState>((resolve, reject) => {
      const id = `${perMinute}/${perDay}/${subject}`;
      let b = this.#pending.get(id);
      if (!b || b.waiters.length >= MAX_BATCH) {
        if (b) this.#send(b);
        this.#pending.set(id, (b = { subject, perMinute, perDay, waiters: [] }));
      }
      b.waiters.push({ resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the poll phase: every request read in this turn has had its chance to join.
        setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batches = this.#pending;
    this.#pending = new Map();
    for (const b of batches.values()) this.#send(b);
  }

  #send(b: Batch): void {
    const n = b.waiters.length;
    this.#run(b.subject, b.perMinute, b.perDay, n).then(
      (r) => {
        // The i-th call of the batch sees the windows as if the i-1 before it had just been taken.
        for (let i = 0; i < n; i++) b.waiters[i]!.resolve(stateOf(r, i + 1, b.perMinute, b.perDay));
      },
      (err: unknown) => {
        for (const w of b.waiters) w.reject(err);
      },
    );
  }

  #run(subject: string, perMinute: number, perDay: number, calls: number): Promise<RateReply> {
    const m = this.store.key(`rl:${subject}`, 'm');
    const d = this.store.key(`rl:${subject}`, 'd');
    return this.store.run('rate limit', (c: ScriptedRedis) => c.dtbRate(2, m, d, String(perMinute), String(perDay), String(calls))) as Promise<RateReply>;
  }

  async slide(subject: string, limit: number, windowMs: number): Promise<SlideState> {
    const k = this.store.key(`reg:${subject}`);
    const member = `${process.pid}.${++seq}.${Math.random().toString(36).slice(2, 8)}`;
    const r = (await this.store.run('rate limit', (c: ScriptedRedis) => c.dtbSlide(1, k, String(limit), String(windowMs), member))) as [number, string, number, string, string];
    return { allowed: r[0] === 1, now: Number(r[1]), used: Number(r[2]), oldestCounted: Number(r[3]), first: Number(r[4]) };
  }
}

/**
 * The state seen by the `nth` call of a batch (1-based; 0: a look that takes nothing). Admitted
 * calls (nth ≤ admitted) see the counts with themselves just added; refused ones see the counts
 * once every admitted call of the batch is in.
 */
export function stateOf(r: RateReply, nth: number, perMinute: number, perDay: number): RateWindowsState {
  const [admitted, now, minuteBefore, dayBefore, first, oldestCounted] = r;
  const t = Number(now);
  if (nth >= 1 && nth <= admitted) {
    const f = Number(first);
    return { allowed: true, now: t, minuteUsed: minuteBefore + nth, first: f, oldestCounted: f, dayUsed: dayBefore + nth };
  }
  const o = Number(oldestCounted);
  const minuteUsed = minuteBefore + admitted;
  const dayUsed = dayBefore + admitted;
  // A look answers whether one more call would fit; a refused call did not.
  const allowed = nth === 0 && minuteUsed < perMinute && dayUsed < perDay;
  return { allowed, now: t, minuteUsed, first: o, oldestCounted: o, dayUsed };
}
