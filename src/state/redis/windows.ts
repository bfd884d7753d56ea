/**
 * The cluster-wide limit windows on Redis: one Lua script per check (./scripts.ts), reading
 * the clock with TIME, so every instance counts against the same windows and clocks do not
 * matter. Keys: P{rl:<subject>}:mw (minute log, one weighted member per script run that admitted
 * calls; expires after 61 s idle) and :d (day counter, expires an hour after its UTC day ends);
 * :m is the one-member-per-call log of the script before session 10, read when upgrading;
 * :gen the generation of a key subject's record (bumped after every write of it; checked by the
 * script for calls from a cached record, so a cache never outlives a change — issue 37).
 * P{reg:<subject>} for the registration window.
 *
 * The hot path (issue 37): the calls of one subject that arrive in the same turn of the event
 * loop are checked by ONE script call (`calls` = how many), which takes them in arrival order
 * as if they had come one after another — the same answers, one round trip and one script run
 * instead of n. See docs/scale-out.md "Hot path".
 */
import type { RateWindowsState, SharedWindows, SlideState } from '../types.js';
import { Cluster, type ChainableCommander } from 'ioredis';
import type { ScriptedRedis } from './scripts.js';

/** What the windows need of the store (RedisStore): its key layout and its scripted connection. */
export interface ScriptRunner {
  /** The key of something shared that is not a collection. */
  key(...parts: string[]): string;
  /** Runs `fn` on the connection; StoreError UNAVAILABLE when Redis cannot be reached. */
  run<T>(what: string, fn: (r: ScriptedRedis) => Promise<T>): Promise<T>;
}

/**
 * The script's answer: admitted, now, minute and day counts before, first and oldest-counted
 * times; or [-1, generation] when the call's key generation is not the subject's (nothing done).
 */
type RateReply = [number, string, number, number, string, string] | [-1, string];

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
  /** The caller's use of the state, applied before settling (SharedWindows.rate). */
  then: ((s: RateWindowsState) => unknown) | undefined;
}

/** The calls of one subject (and limits) waiting for the next script call. */
interface Batch {
  subject: string;
  perMinute: number;
  perDay: number;
  /** The key generation the calls' cached record was read under (undefined: not checked). */
  gen: string | undefined;
  waiters: Waiter[];
}

/** An explicit pipeline with the limit script on it (ioredis copies defined scripts onto pipelines). */
type RatePipeline = ChainableCommander & { dtbRate(numKeys: number, ...args: string[]): RatePipeline };

/** Most calls one script call takes (a bound on one atomic step's work; the log gets one member per run). */
export const MAX_BATCH = 512;

let seq = 0;

/**
 * How long a turn's batches wait for the script calls in flight before they go anyway (ms): a
 * reply that never comes (a hung connection) must not hold the next calls longer than this.
 */
export const HOLD_MS = 2;

export class RedisWindows implements SharedWindows {
  /** Batches of this turn, by subject and limits (a plan change mid-turn starts its own batch). */
  #pending = new Map<string, Batch>();
  #scheduled = false;
  /** Script calls sent and not yet answered. */
  #inFlight = 0;
  /** A flush waits for the calls in flight (set when one was due while they were out). */
  #held: NodeJS.Timeout | undefined;

  constructor(
    readonly store: ScriptRunner,
    readonly holdMs = HOLD_MS,
  ) {}

  rate<R = RateWindowsState>(subject: string, perMinute: number, perDay: number, consume: boolean, then?: (s: RateWindowsState) => R, gen?: string): Promise<R> {
    if (!consume) {
      return attempt(() => this.#run(subject, perMinute, perDay, 0, gen)).then((r) => {
        const s = stateOf(r, 0, perMinute, perDay);
        return then ? then(s) : (s as R);
      });
    }
    return new Promise<R>((resolve, reject) => {
      // Calls checked under another generation (a record re-read mid-turn) are a batch of their own.
      const id = gen === undefined ? `${perMinute}/${perDay}/${subject}` : `${perMinute}/${perDay}/${subject}/${gen}`;
      let b = this.#pending.get(id);
      if (!b || b.waiters.length >= MAX_BATCH) {
        if (b) this.#send(b);
        this.#pending.set(id, (b = { subject, perMinute, perDay, gen, waiters: [] }));
      }
      b.waiters.push({ resolve: resolve as (value: unknown) => void, reject, then });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // After the poll phase: every request read in this turn has had its chance to join.
        setImmediate(() => this.#flush());
      }
    });
  }

  /**
   * At the end of a turn. While script calls are in flight, the turn's batches wait for their
   * replies (at most HOLD_MS) and go with the calls that arrive meanwhile: under load each script
   * call then carries the calls of several turns — fewer writes, fewer script runs — and a lone
   * call is not held (nothing in flight). Each batch is still one atomic script: the answers are
   * the same as if the calls had come one after another.
   */
  #flush(): void {
    this.#scheduled = false;
    if (this.#inFlight > 0) {
      this.#held ??= setTimeout(() => this.#release(), this.holdMs);
      return;
    }
    this.#sendPending();
  }

  #release(): void {
    if (this.#held !== undefined) clearTimeout(this.#held);
    this.#held = undefined;
    this.#sendPending();
  }

  /** A script call answered (or failed): the held batches go once none is left in flight. */
  #settled(): void {
    this.#inFlight--;
    if (this.#held !== undefined && this.#inFlight <= 0) this.#release();
  }

  #sendPending(): void {
    const batches = [...this.#pending.values()];
    this.#pending = new Map();
    if (batches.length === 1) this.#send(batches[0]!);
    else if (batches.length > 1) this.#sendAll(batches);
  }

  #send(b: Batch): void {
    this.#inFlight++;
    attempt(() => this.#run(b.subject, b.perMinute, b.perDay, b.waiters.length, b.gen)).then(
      (r) => {
        this.#settled();
        answer(b, r);
      },
      (err: unknown) => {
        this.#settled();
        fail(b, err);
      },
    );
  }

  /**
   * Several subjects in one turn: one explicit pipeline (one write) on a single node. On a
   * Cluster the subjects live in different slots, so each goes on its own (to its slot's node).
   */
  #sendAll(batches: Batch[]): void {
    this.#inFlight++;
    attempt(() =>
      this.store.run('rate limit', async (c: ScriptedRedis) => {
        if (c instanceof Cluster) {
          for (const b of batches) this.#send(b);
          return;
        }
        const p = c.pipeline() as unknown as RatePipeline;
        for (const b of batches) {
          const args = this.#args(b.subject, b.perMinute, b.perDay, b.waiters.length, b.gen);
          p.dtbRate(args.length / 2, ...args);
        }
        const results = (await p.exec()) ?? [];
        let failed: unknown;
        batches.forEach((b, i) => {
          const [err, r] = results[i] ?? [new Error('no reply'), undefined];
          if (err) failed ??= err;
          else answer(b, r as RateReply);
        });
        // Thrown through store.run, which turns a lost connection into UNAVAILABLE (a 503, as for one
        // script); the batches answered above are settled already and ignore the rejection.
        if (failed !== undefined) throw failed;
      }),
    ).then(
      () => this.#settled(),
      (err: unknown) => {
        this.#settled();
        for (const b of batches) fail(b, err);
      },
    );
  }

  #run(subject: string, perMinute: number, perDay: number, calls: number, gen: string | undefined): Promise<RateReply> {
    const args = this.#args(subject, perMinute, perDay, calls, gen);
    return this.store.run('rate limit', (c: ScriptedRedis) => c.dtbRate(args.length / 2, ...args)) as Promise<RateReply>;
  }

  /** The limit script's keys and arguments (scripts.ts RATE): as many keys as arguments. */
  #args(subject: string, perMinute: number, perDay: number, calls: number, gen: string | undefined): string[] {
    const k = `rl:${subject}`;
    if (gen === undefined) return [this.store.key(k, 'mw'), this.store.key(k, 'd'), this.store.key(k, 'm'), String(perMinute), String(perDay), String(calls)];
    return [this.store.key(k, 'mw'), this.store.key(k, 'd'), this.store.key(k, 'm'), this.store.key(k, 'gen'), String(perMinute), String(perDay), String(calls), gen];
  }

  generation(subject: string): Promise<string> {
    const k = this.store.key(`rl:${subject}`, 'gen');
    return this.store.run('key generation', (c: ScriptedRedis) => c.get(k)).then((g) => g ?? '0');
  }

  async bump(subjects: readonly string[]): Promise<void> {
    await Promise.all(subjects.map((s) => this.store.run('key generation', (c: ScriptedRedis) => c.incr(this.store.key(`rl:${s}`, 'gen')))));
  }

  async slide(subject: string, limit: number, windowMs: number): Promise<SlideState> {
    const k = this.store.key(`reg:${subject}`);
    const member = `${process.pid}.${++seq}.${Math.random().toString(36).slice(2, 8)}`;
    const r = (await this.store.run('rate limit', (c: ScriptedRedis) => c.dtbSlide(1, k, String(limit), String(windowMs), member))) as [number, string, number, string, string];
    return { allowed: r[0] === 1, now: Number(r[1]), used: Number(r[2]), oldestCounted: Number(r[3]), first: Number(r[4]) };
  }
}

/** The i-th call of a batch sees the windows as if the i-1 before it had just been taken. */
function answer(b: Batch, r: RateReply): void {
  for (let i = 0; i < b.waiters.length; i++) {
    const w = b.waiters[i]!;
    const s = stateOf(r, i + 1, b.perMinute, b.perDay);
    if (w.then === undefined) w.resolve(s);
    else {
      try {
        w.resolve(w.then(s));
      } catch (err) {
        w.reject(err);
      }
    }
  }
}

/** A store call that may also throw synchronously (a closed store), as a rejected promise. */
function attempt<T>(f: () => Promise<T>): Promise<T> {
  try {
    return f();
  } catch (err) {
    return Promise.reject(err);
  }
}

function fail(b: Batch, err: unknown): void {
  for (const w of b.waiters) w.reject(err);
}

/**
 * The state seen by the `nth` call of a batch (1-based; 0: a look that takes nothing). Admitted
 * calls (nth ≤ admitted) see the counts with themselves just added; refused ones see the counts
 * once every admitted call of the batch is in.
 */
export function stateOf(r: RateReply, nth: number, perMinute: number, perDay: number): RateWindowsState {
  if (r[0] === -1) return { allowed: false, now: 0, minuteUsed: 0, first: 0, oldestCounted: 0, dayUsed: 0, stale: r[1] };
  const [admitted, now, minuteBefore, dayBefore, first, oldestCounted] = r as Exclude<RateReply, [-1, string]>;
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
