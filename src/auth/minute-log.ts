/**
 * The embedded limiter's minute window (./limiter.ts) as runs of calls: one entry per
 * millisecond that had calls, with the running call number at its end, instead of one
 * timestamp per call (issue 37, session 10). Under a high plan the minute held every call of the
 * last 60 s (≈ 400k timestamps for one busy subject), and each expiry moved the whole array;
 * now calls in one millisecond share an entry, expiry moves a start index, and the call at a
 * position (a refused call's reset) is a binary search. Every answer is the per-call log's.
 */

/** Calls that fall out of the window: at most 60 s old (a call exactly 60 s old is out). */
const WINDOW_MS = 60_000;

/** Expired entries are dropped from the arrays once they are this many and half of them. */
const COMPACT_AT = 1024;

export class MinuteLog {
  /** The instant of each run, in call order; entries before `#head` have expired. */
  #times: number[] = [];
  /** The running call number at the end of each run (the run holds `#ends[i] - #ends[i - 1]` calls). */
  #ends: number[] = [];
  #head = 0;
  /** The call number before the oldest live call. */
  #base = 0;

  /** Calls in the window. */
  get size(): number {
    const n = this.#ends.length;
    return n > this.#head ? this.#ends[n - 1]! - this.#base : 0;
  }

  /** The oldest call in the window (undefined when empty). */
  get first(): number | undefined {
    return this.#times[this.#head];
  }

  /** Entries held (runs, not calls): for tests and memory checks. */
  get runs(): number {
    return this.#ends.length - this.#head;
  }

  /** Drops the calls at most 60 s before `now`. */
  prune(now: number): void {
    const times = this.#times;
    let h = this.#head;
    while (h < times.length && times[h]! <= now - WINDOW_MS) h++;
    if (h === this.#head) return;
    this.#base = this.#ends[h - 1]!;
    if (h === times.length) {
      this.#times = [];
      this.#ends = [];
      this.#head = 0;
      this.#base = 0;
      return;
    }
    this.#head = h;
    if (h >= COMPACT_AT && h * 2 >= times.length) {
      this.#times = times.slice(h);
      this.#ends = this.#ends.slice(h);
      this.#head = 0;
    }
  }

  /**
   * Logs one call at `now`. A call in the newest run's millisecond joins it; any other starts a
   * run (after the newest, even if the clock went back: positions stay in call order, as in the
   * per-call log).
   */
  push(now: number): void {
    const n = this.#ends.length;
    if (n > this.#head && this.#times[n - 1] === now) {
      this.#ends[n - 1]!++;
      return;
    }
    this.#times.push(now);
    this.#ends.push((n > this.#head ? this.#ends[n - 1]! : this.#base) + 1);
  }

  /** The time of the call at `pos` (0: the oldest), undefined past the newest. */
  at(pos: number): number | undefined {
    const want = this.#base + pos + 1;
    let lo = this.#head;
    let hi = this.#ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.#ends[mid]! >= want) hi = mid;
      else lo = mid + 1;
    }
    return this.#times[lo];
  }
}
