import { randomBytes } from 'node:crypto';
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

/** See PendingWrites.writes. */
export interface WriteState {
  settled: number;
  inFlight: boolean;
}

/** How one kind of counter is written (clicks per code, analytics per link and day). */
export interface PendingWritesOptions<V> {
  /** Time between a first count and its write (ms); a refused batch waits four times as long. */
  periodMs: number;
  /**
   * No timer of its own: a batch is written only when `flush` is called (the analytics thread's
   * batches, which its visit log paces: ./visit-log.ts), a refused one at the next call.
   */
  manual?: boolean;
  /**
   * Writes a chunk of entries at once (Collection.addMany: one store call), resolving with each
   * one's outcome in order; a refused entry (or a rejection: all refused) is sent again later.
   * `token` names the chunk (addMany's `once`): a chunk is sent again as it was, under the same
   * token, so a write that failed yet was applied (a Redis command timeout: the command ran
   * once Redis answered again) is not applied twice. `tag` is the `flush` call's that made the
   * chunk's batch (kept with a chunk sent again).
   */
  write(entries: readonly [string, V][], token: string, tag: number | undefined): Promise<PromiseSettledResult<void>[]>;
  /** Adds `more` into `into` (an entry a refused batch had not sent yet, put back beside what was counted meanwhile). */
  merge(into: V, more: V): void;
  /** What `n` unwritten entries are, for log lines ("3 codes' clicks"). */
  describe(n: number): string;
  log: Logger;
}

/** A chunk whose write failed: sent again as it was, under its token. */
interface Resend<V> {
  token: string;
  entries: [string, V][];
  /** When its oldest count was counted (performance.now()). */
  since: number;
  /** Its batch's tag (see `write`). */
  tag: number | undefined;
}

/**
 * Counters of one instance kept in memory and written to the store in batches: a visit costs a
 * map update, not a store write. One batch is written at a time. A chunk the store refuses
 * (storage failing, Redis away or not answering) is kept as it was and sent again, first, at
 * each later flush, under its token (see `write`): its counts are applied once. What the batch
 * had not sent yet goes back into the pending entries, merged with what was counted meanwhile.
 * Entries are read (`values`) while pending, while being written and while waiting to be sent
 * again.
 */
export class PendingWrites<V> {
  readonly #opts: PendingWritesOptions<V>;
  #pending = new Map<string, V>();
  /** When the oldest pending entry was counted (performance.now()). */
  #pendingSince = 0;
  /** The batch's entries not sent yet (still counted by `values`). */
  #flushing: Map<string, V> | undefined;
  #flushingSince = 0;
  /** The chunk being written, and when its write settles. */
  #sending: readonly [string, V][] = [];
  #sendSettled: Promise<unknown> | undefined;
  /** What `dropWhere` dropped while the batch was under way: kept out of what it sends again or puts back. */
  #drops: ((key: string, value: V) => boolean)[] = [];
  /** Chunks whose write failed, oldest first. */
  #resends: Resend<V>[] = [];
  /** Makes the chunks' tokens unique across instances (they share the store). */
  readonly #tokenPrefix = randomBytes(9).toString('base64url');
  #tokens = 0;
  /** The last batch put entries back into the pending ones (not sent). */
  #putBack = false;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(opts: PendingWritesOptions<V>) {
    this.#opts = opts;
  }

  /** The pending entry of `key` (made by `init` when none), to count into; its write is scheduled. */
  entry(key: string, init: (key: string) => V): V {
    let v = this.#pending.get(key);
    if (v === undefined) {
      if (this.#pending.size === 0) this.#pendingSince = performance.now();
      this.#pending.set(key, (v = init(key)));
      this.#schedule(this.#opts.periodMs);
    }
    return v;
  }

  /**
   * The writes' state for a read that adds the unwritten entries to what the store holds
   * (readBetweenWrites): how many chunk writes have settled so far, and whether one is under way
   * (a chunk lands in the store at some moment of its write, before it leaves the unwritten ones).
   */
  writes(): WriteState {
    return { settled: this.#settled, inFlight: this.#inFlight > 0 };
  }

  /**
   * Whether entries of a batch before the last one are still unwritten: chunks to send again, or
   * entries the last batch put back into the pending ones. False once a batch wrote them all.
   */
  unsent(): boolean {
    return this.#resends.length > 0 || this.#putBack;
  }

  /** Whether nothing is left to write: nothing pending, no batch under way, no chunk to send again. */
  idle(): boolean {
    return this.#running === undefined && this.#pending.size === 0 && this.#resends.length === 0;
  }

  /** The unwritten entries of `key`: those waiting to be sent again or being written, then the pending one. */
  *of(key: string): Generator<V> {
    for (const [k, v] of this.#sent()) if (k === key) yield v;
    for (const batch of [this.#flushing, this.#pending]) {
      const v = batch?.get(key);
      if (v !== undefined) yield v;
    }
  }

  /** Every unwritten entry: those waiting to be sent again or being written, then the pending ones. */
  *values(): Generator<V> {
    for (const [, v] of this.#sent()) yield v;
    for (const batch of [this.#flushing, this.#pending]) if (batch) yield* batch.values();
  }

  /** The entries of chunks sent and not known to be written: the one being written, those to send again. */
  *#sent(): Generator<[string, V]> {
    yield* this.#sending;
    for (const r of this.#resends) yield* r.entries;
  }

  /** Entries not written yet, and the age of the oldest count among them (the metrics' gauges). */
  unwritten(): UnwrittenGauges {
    let entries = this.#sending.length + (this.#flushing?.size ?? 0) + this.#pending.size;
    let since = this.#flushing !== undefined || this.#sending.length > 0 ? this.#flushingSince : this.#pending.size > 0 ? this.#pendingSince : Infinity;
    for (const r of this.#resends) {
      entries += r.entries.length;
      since = Math.min(since, r.since);
    }
    return { entries, oldestSeconds: since === Infinity ? 0 : (performance.now() - since) / 1000 };
  }

  /**
   * Drops the unwritten entries `drop` names (their record was deleted): pending, in the batch
   * under way, in chunks to send again; the chunk being written cannot be called back, so the
   * promise resolves once its write has settled (a delete after that is not undone by it).
   */
  dropWhere(drop: (key: string, value: V) => boolean): Promise<void> {
    for (const [k, v] of this.#pending) if (drop(k, v)) this.#pending.delete(k);
    if (this.#flushing) for (const [k, v] of this.#flushing) if (drop(k, v)) this.#flushing.delete(k);
    // A chunk to send again may lose entries (its token then covers less, which is still once).
    for (const r of this.#resends) r.entries = r.entries.filter(([k, v]) => !drop(k, v));
    this.#resends = this.#resends.filter((r) => r.entries.length > 0);
    if (this.#running === undefined) return Promise.resolve();
    // The chunk under way may be refused in part: what it keeps to send again is filtered too.
    this.#drops.push(drop);
    return this.#sending.some(([k, v]) => drop(k, v)) ? this.#sendSettled!.then(() => {}) : Promise.resolve();
  }

  #schedule(ms: number): void {
    if (this.#timer !== undefined || this.#closed || this.#opts.manual) return;
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
   * was counted before the call is written (or put back, refused) when it resolves. `tag` goes
   * with the batch's chunks to `write`.
   */
  flush(tag?: number): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#running) return this.#running.then(() => this.flush(tag));
    if (this.#pending.size === 0 && this.#resends.length === 0) return Promise.resolve();
    this.#running = this.#writeBatch(tag).finally(() => (this.#running = undefined));
    return this.#running;
  }

  /** The batch under way (never rejects: a refused batch is put back). */
  #running: Promise<void> | undefined;
  /** Chunk writes under way, and settled since the start (see writes). */
  #inFlight = 0;
  #settled = 0;

  async #writeBatch(tag: number | undefined): Promise<void> {
    const { periodMs, write, merge, describe, log } = this.#opts;
    const resends = this.#resends;
    this.#resends = [];
    const batch = (this.#flushing = this.#pending);
    this.#flushingSince = this.#pendingSince;
    this.#pending = new Map();
    let failed: unknown;
    let refused = 0;
    /** Writes a chunk under `token`; what the store refused is kept to send again. False when any was. */
    const send = async (entries: [string, V][], token: string, since: number, tag: number | undefined): Promise<boolean> => {
      this.#sending = entries;
      this.#inFlight++;
      let settled: PromiseSettledResult<void>[];
      const writing = (async () => write(entries, token, tag))(); // a throw is a rejection
      this.#sendSettled = writing.catch(() => {});
      try {
        settled = await writing;
      } catch (reason) {
        settled = entries.map(() => ({ status: 'rejected', reason }));
      } finally {
        this.#sending = [];
        this.#inFlight--;
        this.#settled++;
      }
      const left = entries.filter(([k, v], i) => settled[i]?.status !== 'fulfilled' && !this.#drops.some((d) => d(k, v)));
      if (left.length === 0) return true;
      failed ??= (settled.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined)?.reason;
      refused += left.length;
      this.#resends.push({ token, entries: left, since, tag });
      return false;
    };
    try {
      // Chunks refused before go first, as they were; once one is refused again, the rest wait.
      for (const [i, r] of resends.entries()) {
        if (!(await send(r.entries, r.token, r.since, r.tag))) {
          this.#resends.push(...resends.slice(i + 1));
          break;
        }
      }
      let chunk: [string, V][] = [];
      let sent = 0;
      const next = async (): Promise<boolean> => {
        const c = chunk;
        chunk = [];
        for (const [key] of c) batch.delete(key);
        return send(c, `${this.#tokenPrefix}.${++this.#tokens}`, this.#flushingSince, tag);
      };
      if (failed === undefined) {
        for (const entry of batch) {
          chunk.push(entry);
          if (chunk.length < CHUNK) continue;
          // A refused chunk stops the batch: the rest waits for the next try with it.
          if (!(await next())) break;
          // Thousands of entries in one batch: give the event loop back now and then (an embedded
          // store's write settles in microtasks, so the loop alone would never yield).
          if ((sent += CHUNK) % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
        }
        if (chunk.length > 0 && failed === undefined) await next();
      }
    } finally {
      this.#flushing = undefined;
      this.#drops = [];
      this.#putBack = batch.size > 0;
      if (batch.size > 0) {
        // Not sent: back into the pending entries (merged with any counted meanwhile), which are
        // now as old as the batch.
        this.#pendingSince = this.#flushingSince;
        for (const [key, value] of batch) {
          const cur = this.#pending.get(key);
          if (cur === undefined) this.#pending.set(key, value);
          else merge(cur, value);
        }
      }
      if (this.#resends.length > 0 || batch.size > 0) {
        if (!this.#closed) log.warn(`short links: ${describe(refused + batch.size)} not written yet; retrying`, failed);
        this.#schedule(periodMs * 4);
      } else if (this.#pending.size > 0) {
        // Counted while this batch was written.
        this.#schedule(periodMs);
      }
    }
  }

  /**
   * Writes what is pending and stops the timer (before the store closes). `manual`: writes
   * nothing (the owner wrote its last batch: a write here would not carry its tag), only waits
   * for a batch under way.
   */
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
    if (this.#opts.manual) return;
    if (!this.#running) await this.flush();
    const lost = this.unwritten().entries;
    if (lost > 0) this.#opts.log.warn(`short links: ${this.#opts.describe(lost)} lost at shutdown (storage failing)`);
  }
}
