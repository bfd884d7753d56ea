/**
 * The fetch budget: how many fetches run at once (in all and per host) and how many body bytes
 * they may hold together. A fetch past a bound waits briefly in a bounded queue; when the queue
 * is full, or the wait runs out, it is refused with 429 RATE_LIMITED and `Retry-After` — the
 * server never holds an unbounded number of sockets or buffers for fetched URLs.
 */
import { ToolError } from '../errors.js';

export interface FetchBudgetLimits {
  /** Fetches in progress at once, every host together. */
  maxConcurrent: number;
  /** Fetches in progress at once to one host name (any port). */
  maxPerHost: number;
  /** Sum of the body caps (`maxBytes`) of the fetches in progress: the memory they may hold. */
  maxBytesInFlight: number;
  /** Fetches waiting for room; one more is refused at once. */
  maxQueue: number;
  /** Longest wait for room, in ms; then the fetch is refused. */
  maxWaitMs: number;
}

export const DEFAULT_FETCH_BUDGET: Readonly<FetchBudgetLimits> = Object.freeze({
  maxConcurrent: 32,
  maxPerHost: 8,
  maxBytesInFlight: 256 * 1024 * 1024,
  maxQueue: 64,
  maxWaitMs: 2_000,
});

/** Room held by one fetch; released once, when the fetch ends. */
export interface FetchLease {
  /** Trades the host slot for one on `host` (a redirect to another host); may wait or refuse. */
  moveTo(host: string, opts?: WaitOptions): Promise<void>;
  release(): void;
}

export interface WaitOptions {
  /** Cancels the wait (the caller gave up); the promise rejects with its reason. */
  signal?: AbortSignal;
  /** Wait at most this long (and never longer than `maxWaitMs`). */
  waitMs?: number;
}

type Bound = 'fetches' | 'fetches_per_host' | 'bytes_in_flight';

interface Waiter {
  host: string;
  /** 0 and `global: false` when only a host slot is wanted (a redirect). */
  bytes: number;
  global: boolean;
  grant: () => void;
}

const MESSAGES: Record<Bound, string> = {
  fetches: 'Too many URL fetches in progress; retry in a moment',
  fetches_per_host: 'Too many fetches to this host in progress; retry in a moment',
  bytes_in_flight: 'Too many large URL fetches in progress; retry in a moment',
};

/** Global and per-host bounds on concurrent fetches and bytes in flight, with a bounded queue. */
export class FetchBudget {
  readonly limits: Readonly<FetchBudgetLimits>;
  #running = 0;
  #bytes = 0;
  readonly #perHost = new Map<string, number>();
  readonly #queue: Waiter[] = [];

  constructor(limits: Partial<FetchBudgetLimits> = {}) {
    const l = { ...DEFAULT_FETCH_BUDGET, ...limits };
    for (const [k, v] of Object.entries(l)) {
      if (!Number.isFinite(v) || v < (k === 'maxQueue' || k === 'maxWaitMs' ? 0 : 1)) throw new RangeError(`fetch budget: ${k} must be a positive number`);
    }
    this.limits = Object.freeze(l);
  }

  /** Takes a fetch slot on `host` and `bytes` of the byte budget, waiting if need be. */
  async acquire(host: string, bytes: number, opts: WaitOptions = {}): Promise<FetchLease> {
    const want = { host: host.toLowerCase(), bytes: Math.min(Math.max(0, bytes), this.limits.maxBytesInFlight), global: true };
    await this.#take(want, opts);
    let heldHost: string | null = want.host;
    let released = false;
    return {
      moveTo: async (next, o = {}) => {
        const h = next.toLowerCase();
        if (released || h === heldHost) return;
        if (heldHost !== null) this.#putHost(heldHost);
        heldHost = null;
        this.#pump();
        await this.#take({ host: h, bytes: 0, global: false }, o);
        heldHost = h;
      },
      release: () => {
        if (released) return;
        released = true;
        this.#running--;
        this.#bytes -= want.bytes;
        if (heldHost !== null) this.#putHost(heldHost);
        this.#pump();
      },
    };
  }

  /** Fetches running and waiting, and the bytes reserved by the running ones. */
  get load(): { running: number; waiting: number; bytesInFlight: number } {
    return { running: this.#running, waiting: this.#queue.length, bytesInFlight: this.#bytes };
  }

  #blockedBy(w: Omit<Waiter, 'grant'>): Bound | null {
    if ((this.#perHost.get(w.host) ?? 0) >= this.limits.maxPerHost) return 'fetches_per_host';
    if (!w.global) return null;
    if (this.#running >= this.limits.maxConcurrent) return 'fetches';
    if (this.#bytes + w.bytes > this.limits.maxBytesInFlight) return 'bytes_in_flight';
    return null;
  }

  #grant(w: Omit<Waiter, 'grant'>): void {
    this.#perHost.set(w.host, (this.#perHost.get(w.host) ?? 0) + 1);
    if (w.global) {
      this.#running++;
      this.#bytes += w.bytes;
    }
  }

  #putHost(host: string): void {
    const n = (this.#perHost.get(host) ?? 1) - 1;
    if (n <= 0) this.#perHost.delete(host);
    else this.#perHost.set(host, n);
  }

  /** Grants, in arrival order, every waiter that now fits. */
  #pump(): void {
    for (let i = 0; i < this.#queue.length; ) {
      const w = this.#queue[i]!;
      if (this.#blockedBy(w) === null) {
        this.#queue.splice(i, 1);
        this.#grant(w);
        w.grant();
      } else i++;
    }
  }

  #refuse(bound: Bound): ToolError {
    const max = bound === 'fetches' ? this.limits.maxConcurrent : bound === 'fetches_per_host' ? this.limits.maxPerHost : this.limits.maxBytesInFlight;
    return new ToolError('RATE_LIMITED', MESSAGES[bound], { limit: bound, max, retry_after: 1 }, { 'Retry-After': '1' });
  }

  #take(want: Omit<Waiter, 'grant'>, { signal, waitMs }: WaitOptions): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const bound = this.#blockedBy(want);
    if (bound === null) {
      this.#grant(want);
      return Promise.resolve();
    }
    const wait = Math.min(waitMs ?? this.limits.maxWaitMs, this.limits.maxWaitMs);
    if (this.#queue.length >= this.limits.maxQueue || wait <= 0) return Promise.reject(this.#refuse(bound));
    return new Promise<void>((resolve, reject) => {
      const leave = (): boolean => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const i = this.#queue.indexOf(waiter);
        if (i >= 0) this.#queue.splice(i, 1);
        return i >= 0;
      };
      const onAbort = () => {
        if (leave()) reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        if (leave()) reject(this.#refuse(this.#blockedBy(want) ?? bound));
      }, wait);
      const waiter: Waiter = {
        ...want,
        grant: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(waiter);
    });
  }
}
