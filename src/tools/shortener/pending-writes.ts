import type { Logger } from '../../log.js';
import type { UnwrittenGauges } from '../../metrics.js';

/**
 * Writes sent together before the next chunk (and a turn of the event loop given back). One
 * after another, each write cost a round trip and a socket write, and under load the loop's
 * other work came between every two: a batch of 419 codes took 3.9 s to write at 1M links
 * (Zipf, Redis), so the counts fell seconds behind the stated flush period. Together, a chunk's
 * commands go out as one pipeline (one write, one wake-up of redis-server): CPU per `add` 55 →
 * 14 µs, per `increment` 100–120 → 41–57 µs (a loop of 20,000 on Redis, `process.cpuUsage`).
 * Not more: a chunk's scripts run before the redirects' reads queued behind them on the same
 * connection (≈ 32 × 15 µs of redis-server), so a chunk stays under a millisecond (issue 32).
 */
export const CHUNK = 32;

/** Writes between two turns of the event loop given back (≈ 1–2 ms of work). */
const YIELD_EVERY = 256;

/** The longest close() waits for a batch under way (a store that hangs must not hold the shutdown). */
const CLOSE_WAIT_MS = 5_000;

/** How one kind of counter is written (clicks per code, analytics per link and day). */
export interface PendingWritesOptions<V> {
  /** Time between a first count and its write (ms); a refused batch waits four times as long. */
  periodMs: number;
  /**
   * Writes a chunk of entries at once (Collection.addMany: one store call), resolving with each
   * one's outcome in order; a refused entry (or a rejection: all refused) is kept with the rest
   * of the batch for a later flush.
   */
  write(entries: readonly [string, V][]): Promise<PromiseSettledResult<void>[]>;
  /** Adds `more` into `into` (a refused entry put back beside what was counted meanwhile). */
  merge(into: V, more: V): void;
  /** What `n` unwritten entries are, for log lines ("3 codes' clicks"). */
  describe(n: number): string;
  log: Logger;
}

/**
 * Counters of one instance kept in memory and written to the store in batches: a visit costs a
 * map update, not a store write. One batch is written at a time; a batch the store refuses
 * (storage failing, Redis away) is put back, merged with what was counted meanwhile, and tried
 * again later. Entries are read (`values`) while pending and while being written.
 */
export class PendingWrites<V> {
  readonly #opts: PendingWritesOptions<V>;
  #pending = new Map<string, V>();
  /** When the oldest pending entry was counted (performance.now()). */
  #pendingSince = 0;
  /** The batch being written (still counted by `values`). */
  #flushing: Map<string, V> | undefined;
  #flushingSince = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(opts: PendingWritesOptions<V>) {
    this.#opts = opts;
  }

  /** The pending entry of `key` (made by `init` when none), to count into; its write is scheduled. */
  entry(key: string, init: () => V): V {
    let v = this.#pending.get(key);
    if (v === undefined) {
      if (this.#pending.size === 0) this.#pendingSince = performance.now();
      this.#pending.set(key, (v = init()));
    }
    this.#schedule(this.#opts.periodMs);
    return v;
  }

  /** The unwritten entries of `key`: the one being written, then the pending one. */
  *of(key: string): Generator<V> {
    for (const batch of [this.#flushing, this.#pending]) {
      const v = batch?.get(key);
      if (v !== undefined) yield v;
    }
  }

  /** Every unwritten entry: those being written, then the pending ones. */
  *values(): Generator<V> {
    for (const batch of [this.#flushing, this.#pending]) if (batch) yield* batch.values();
  }

  /** Entries not written yet, and the age of the oldest count among them (the metrics' gauges). */
  unwritten(): UnwrittenGauges {
    const since = this.#flushing ? this.#flushingSince : this.#pending.size > 0 ? this.#pendingSince : undefined;
    return { entries: (this.#flushing?.size ?? 0) + this.#pending.size, oldestSeconds: since === undefined ? 0 : (performance.now() - since) / 1000 };
  }

  /** Drops the pending entries `drop` names (their record was deleted). */
  dropWhere(drop: (key: string, value: V) => boolean): void {
    for (const [k, v] of this.#pending) if (drop(k, v)) this.#pending.delete(k);
  }

  #schedule(ms: number): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // Due while a batch is being written: that batch schedules the next when it ends.
      if (this.#running === undefined) void this.flush();
    }, ms);
    this.#timer.unref();
  }

  /**
   * Writes the pending entries, one `write` each. One batch at a time: called while a batch is
   * being written, it waits for that batch and then writes what was counted meanwhile, so what
   * was counted before the call is written (or put back, refused) when it resolves.
   */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#running) return this.#running.then(() => this.flush());
    if (this.#pending.size === 0) return Promise.resolve();
    this.#running = this.#writeBatch().finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** The batch under way (never rejects: a refused batch is put back). */
  #running: Promise<void> | undefined;

  async #writeBatch(): Promise<void> {
    const { periodMs, write, merge, describe, log } = this.#opts;
    const batch = (this.#flushing = this.#pending);
    this.#flushingSince = this.#pendingSince;
    this.#pending = new Map();
    let failed: unknown;
    try {
      let chunk: [string, V][] = [];
      const send = async (): Promise<boolean> => {
        let settled: PromiseSettledResult<void>[];
        try {
          settled = await write(chunk);
        } catch (reason) {
          settled = chunk.map(() => ({ status: 'rejected', reason }));
        }
        settled.forEach((r, i) => {
          if (r.status === 'fulfilled') batch.delete(chunk[i]![0]);
          else failed ??= r.reason;
        });
        chunk = [];
        return failed === undefined;
      };
      let sent = 0;
      for (const entry of batch) {
        chunk.push(entry);
        if (chunk.length < CHUNK) continue;
        // A refused chunk stops the batch: the rest waits for the next try with it.
        if (!(await send())) break;
        // Thousands of entries in one batch: give the event loop back now and then (an embedded
        // store's write settles in microtasks, so the loop alone would never yield).
        if ((sent += CHUNK) % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
      }
      if (chunk.length > 0 && failed === undefined) await send();
    } finally {
      this.#flushing = undefined;
      if (batch.size > 0) {
        // Not written: back into the pending entries (merged with any counted meanwhile), which
        // are now as old as the batch.
        this.#pendingSince = this.#flushingSince;
        for (const [key, value] of batch) {
          const cur = this.#pending.get(key);
          if (cur === undefined) this.#pending.set(key, value);
          else merge(cur, value);
        }
        if (!this.#closed) log.warn(`short links: ${describe(batch.size)} not written yet; retrying`, failed);
        this.#schedule(periodMs * 4);
      } else if (this.#pending.size > 0) {
        // Counted while this batch was written.
        this.#schedule(periodMs);
      }
    }
  }

  /** Writes what is pending and stops the timer (before the store closes). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    // A flush under way finishes first (within a bound: a store that hangs must not hold the shutdown); then the rest.
    if (this.#running) {
      let bound: NodeJS.Timeout | undefined;
      await Promise.race([this.#running, new Promise((r) => (bound = setTimeout(r, CLOSE_WAIT_MS)))]);
      clearTimeout(bound);
    }
    if (!this.#running) await this.flush();
    if (this.#pending.size > 0) this.#opts.log.warn(`short links: ${this.#opts.describe(this.#pending.size)} lost at shutdown (storage failing)`);
  }
}
