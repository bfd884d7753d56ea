import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { Logger } from '../../log.js';
import type { Services } from '../../services.js';
import { moduleWorker } from '../../lib/worker-url.js';
import { RpcPeer } from '../../lib/rpc.js';
import { remoteStore } from '../../state/remote.js';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../../config.js';
import type { Store, StoreHealth } from '../../state/types.js';
import { ANALYTICS_COLLECTIONS, ANALYTICS_DIR, finishAnalyticsMove } from '../../state/index.js';
import { routedStore } from '../../state/routed.js';
import { moveCollection } from '../../state/move.js';
import type { UnwrittenGauges } from '../../metrics.js';
import { ANALYTICS_SWEEP_MS, SHORTENER, sweepAnalytics, type Analytics, type VisitHeaders } from './analytics.js';
import { LINK_DAYS, type DayDelta } from './analytics-counters.js';
import type { WriteState } from './pending-writes.js';
import { referrerHost, UaCache, type UaInfo } from './analytics-ua.js';
import { addLateClicks, ROLLED_UP_EVENT, ROLLUP_ID, startRollUp, type LateClicks } from './clicks.js';
import { LINK_CLICK_ROLLUP } from './links.js';
import { settleVisitLogs } from './visit-log.js';
import { systemClock } from '../../core/clock.js';

/**
 * The ring of visits the main thread hands to the analytics thread: SLOTS slots of SLOT bytes
 * in shared memory after two Int32 counters, [written, read] (visits put in and taken out so
 * far, modulo 2^32). A slot: the code's length (byte 0) and its characters (bytes 1–20: codes
 * are 3–20 ASCII characters), the visit's profile number (Uint32 at 24) and its time (Float64
 * ms at 32).
 */
export const SLOT = 40;
/**
 * The ring's header: [written, read] (Int32 each), then the thread's gauges of what it counted
 * and has not written (Float64 link-days; Float64 epoch ms of the oldest such count, 0: none),
 * which it sets after each drain and write (the metrics read them at a scrape).
 */
export const HEADER = 24;
export const GAUGES_AT = 8;
export const SLOTS = 1 << 16;
export const CODE_MAX = 20;
export const PROFILE_AT = 24;
export const TIME_AT = 32;
/** How long a closed thread is given to end on its own before it is terminated (ms). */
const CLOSE_EXIT_MS = 2_000;
/** The analytics thread drains the ring this often (ms). */
export const DRAIN_MS = 5;

/** A visit's profile as the main thread numbers it: its User-Agent's families and the referrer host ('' for a bot). */
export interface ProfileDef {
  no: number;
  ua: UaInfo;
  referrer: string;
}

/**
 * What the main thread posts on the profile port: a new profile; a visit the full ring had no
 * slot for; or that profiles numbered below `below` are no longer used once the visits put in
 * the ring before `at` (its written counter then) are read.
 */
export type ProfileMessage = { def: ProfileDef } | { visit: [code: string, profile: number, now: number] } | { forget: { below: number; at: number } };

// The state layer routes these by name (DATA_DIR/analytics).
if (!ANALYTICS_COLLECTIONS.has(LINK_DAYS.name) || ANALYTICS_COLLECTIONS.size !== 1) throw new Error('analytics thread: ANALYTICS_COLLECTIONS is not LINK_DAYS');

/**
 * Profiles this thread keeps numbered at most; then it forgets them all and numbers anew
 * (numbers only grow), and tells the analytics thread, which forgets the old ones once it has
 * read every visit put in the ring before (ProfileMessage `forget`): neither thread holds more
 * than two rounds of profiles, whatever a client sends.
 */
export const MAX_NUMBERED = 50_000;

/**
 * The analytics thread (ANALYTICS_THREAD=worker, file store): a worker thread that owns the
 * day's visit counts and their writes, in a file store of its own (DATA_DIR/analytics). The
 * main thread classifies each visit (UaCache, referrer host), numbers its profile once, and
 * puts the code, the number and the time into the ring; the thread counts them (VisitAnalytics,
 * as in one thread) and writes the link-day records. The main thread reads those records
 * through `store` (routed: ../../state/routed.ts) and asks the thread for what it has not
 * written. docs/shortener.md, "The analytics thread".
 */
export class AnalyticsThread {
  /** The thread's store as the main thread sees it (LINK_DAYS only). */
  readonly store: Store & { setHealth(h: StoreHealth): void };
  readonly #config: Config;
  readonly #log: Logger;
  readonly #sab = new SharedArrayBuffer(HEADER + SLOT * SLOTS);
  readonly #ends = new Int32Array(this.#sab, 0, 2);
  readonly #threadGauges = new Float64Array(this.#sab, GAUGES_AT, 2);
  readonly #bytes = new Uint8Array(this.#sab, HEADER);
  readonly #view = new DataView(this.#sab, HEADER);
  /** When a visit went into an empty ring (performance.now()): the age of the oldest visit waiting there. */
  #waitingSince = 0;
  readonly #channel = new MessageChannel();
  readonly #profilePort: MessagePort = this.#channel.port1;
  #worker: Worker | undefined;
  #rpc: RpcPeer | undefined;
  /** The thread's start: made at the first call or visit (or at once: `started`); a start that failed stays failed. */
  #starting: Promise<RpcPeer> | undefined;
  readonly #attached: Promise<Services>;
  #attach!: (s: Services) => void;
  #closing: Promise<void> | undefined;
  /** The thread has ended (closed, or failed). */
  #exited = false;
  #written = 0;

  /** The thread, not started yet: it starts at the first visit or call, or with `started()`. */
  constructor(opts: { config: Config; log: Logger }) {
    this.#config = opts.config;
    this.#log = opts.log;
    this.#attached = new Promise((r) => (this.#attach = r));
    this.store = remoteStore({ call: (m, ...a) => this.#storeCall(m, a) }, 'file', [LINK_DAYS], () => this.close());
  }

  /**
   * A call of its store. Not started, the thread's store is empty (it starts with the server
   * when DATA_DIR/analytics exists): reads and flushes answer so without starting it.
   */
  #storeCall<T>(method: string, args: unknown[]): Promise<T> {
    if (!this.running) {
      const empty = emptyAnswer(method, args);
      if (empty !== NOT_EMPTY) return Promise.resolve(empty as T);
    }
    return this.call<T>(method, ...args);
  }

  /** The thread is gone or never came: its store's health says why (/healthz answers 503). */
  #unhealthy(reason: string): void {
    this.store.setHealth({ ok: false, reason, since: new Date().toISOString() });
  }

  /** Starts the thread now; rejects (a StoreError: LOCKED, CORRUPT) when its store does not open. */
  async started(): Promise<void> {
    await this.#start();
  }

  #start(): Promise<RpcPeer> {
    return (this.#starting ??= this.#spawn().catch((err: unknown) => {
      this.#log.error('analytics thread: it did not start; visits are not counted', err);
      this.#unhealthy(`the analytics thread did not start: ${err instanceof Error ? err.message : String(err)}`);
      throw err;
    }));
  }

  async #spawn(): Promise<RpcPeer> {
    const log = this.#log;
    const entry = moduleWorker(import.meta.url, 'analytics-worker');
    const port2 = this.#channel.port2;
    const worker = new Worker(entry.url, { execArgv: entry.execArgv, workerData: { config: this.#config, sab: this.#sab, profilePort: port2 }, transferList: [port2] });
    const rpc = new RpcPeer(worker, {
      log: (level: 'debug' | 'info' | 'warn' | 'error', msg: string, extra?: string) => log[level](`analytics thread: ${msg}`, extra),
      health: (h: StoreHealth) => this.store.setHealth(h),
      through: async () => rolledUpThrough(await this.#attached),
      late: async (late: LateClicks[], token: string) => addLateClicks(await this.#attached, late, token),
    });
    this.#worker = worker;
    this.#rpc = rpc;
    worker.on('error', (err) => {
      log.error('analytics thread failed: visits are no longer counted', err);
      this.#unhealthy(`the analytics thread failed: ${err.message}`);
      rpc.closed(err);
    });
    worker.on('exit', (code) => {
      this.#exited = true;
      rpc.closed(new Error(`the analytics thread exited (${code})`));
      if (!this.closing) {
        log.error(`analytics thread exited (${code}): visits are no longer counted`);
        this.#unhealthy(`the analytics thread exited (${code})`);
      }
    });
    try {
      await rpc.call('start');
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    return rpc;
  }

  /** The services this thread's counts belong to (the roll-up's hooks read them). */
  attach(services: Services): void {
    this.#attach(services);
    services.metrics.watchUnwritten('analytics', () => this.gauges());
    // The thread keeps the roll-up's `through` for ANALYTICS_FLUSH_MS: told at once when this instance moved it (before any later call of ours).
    services.events.on(ROLLED_UP_EVENT, () => this.#rpc?.notify('rolled'));
  }

  /** The shortener's analytics for `services` (visitAnalytics). */
  analytics(services: Services): Analytics {
    return new ThreadAnalytics(this, services);
  }

  /**
   * What is counted and not written (the metrics' gauges): the thread's link-days not written,
   * and the visits waiting in the ring (not counted into a link-day yet); the age of the oldest.
   */
  gauges(): UnwrittenGauges {
    const waiting = (this.#written - Atomics.load(this.#ends, 1)) | 0;
    const [entries, oldest] = this.#threadGauges as unknown as [number, number];
    let seconds = oldest > 0 ? Math.max(0, (performance.timeOrigin + performance.now() - oldest) / 1000) : 0;
    if (waiting > 0) seconds = Math.max(seconds, (performance.now() - this.#waitingSince) / 1000);
    return { entries: entries + waiting, oldestSeconds: seconds };
  }

  /** Calls the thread (started first if it is not). */
  call<T>(method: string, ...args: unknown[]): Promise<T> {
    if (this.#closing && !this.#rpc) return Promise.reject(new Error('the analytics thread is closed'));
    return this.#start().then((rpc) => rpc.call<T>(method, ...args));
  }

  /** Whether it was started (tests). */
  get running(): boolean {
    return this.#starting !== undefined;
  }

  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /** Profile numbers by User-Agent info (UaCache's objects), then referrer host. */
  #numbers = new WeakMap<UaInfo, Map<string, number>>();
  /** Numbered since the last reset, and the last number given (never 0, never reused below 2^32). */
  #numbered = 0;
  #lastNo = 0;
  /** Visits that went as messages (the ring full): the first is logged. */
  #overflowed = 0;

  /** Hands one visit to the thread (see SLOT). */
  put(code: string, ua: UaInfo, referrer: string, now: number): void {
    let byRef = this.#numbers.get(ua);
    if (byRef === undefined) this.#numbers.set(ua, (byRef = new Map()));
    let no = byRef.get(referrer);
    if (no === undefined) {
      if (this.#numbered >= MAX_NUMBERED) {
        this.#profilePort.postMessage({ forget: { below: this.#lastNo + 1, at: this.#written } } satisfies ProfileMessage);
        this.#numbers = new WeakMap();
        this.#numbered = 0;
        this.#numbers.set(ua, (byRef = new Map()));
      }
      this.#numbered++;
      no = this.#lastNo = this.#lastNo >= 0xffff_ffff ? 1 : this.#lastNo + 1;
      byRef.set(referrer, no);
      this.#profilePort.postMessage({ def: { no, ua, referrer } } satisfies ProfileMessage);
    }
    const written = this.#written;
    const waiting = (written - Atomics.load(this.#ends, 1)) | 0;
    if (waiting === 0) this.#waitingSince = performance.now();
    if (waiting >= SLOTS || code.length > CODE_MAX) {
      // The ring is full (the thread behind): the visit goes as a message instead, never lost.
      this.#profilePort.postMessage({ visit: [code, no, now] } satisfies ProfileMessage);
      if (this.#overflowed++ === 0) this.#log.warn('analytics thread: its ring of visits is full; visits go as messages until it catches up');
      return;
    }
    const at = (written & (SLOTS - 1)) * SLOT;
    const bytes = this.#bytes;
    bytes[at] = code.length;
    for (let i = 0; i < code.length; i++) bytes[at + 1 + i] = code.charCodeAt(i);
    this.#view.setUint32(at + PROFILE_AT, no);
    this.#view.setFloat64(at + TIME_AT, now);
    Atomics.store(this.#ends, 0, (this.#written = (written + 1) | 0));
    // The first visit starts the thread (it drains what waits in the ring then).
    if (this.#starting === undefined) this.#start().catch(() => {});
  }

  /** Drains and writes what was counted, closes the thread's store and stops the thread. Idempotent. */
  close(): Promise<void> {
    return (this.#closing ??= (async () => {
      const rpc = this.#starting && (await this.#starting.catch(() => undefined));
      if (rpc) {
        try {
          await rpc.call('close');
        } catch (err) {
          this.#log.warn('analytics thread: closing failed', err);
        }
        rpc.closed(new Error('the analytics thread is closed'));
      }
      this.#profilePort.close();
      const worker = this.#worker;
      if (worker && rpc && !this.#exited) {
        // It ends on its own once closed; stopped when it does not within a bound.
        let timer: NodeJS.Timeout | undefined;
        const exited = new Promise<void>((r) => worker.once('exit', () => r()));
        await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, CLOSE_EXIT_MS)))]);
        clearTimeout(timer);
      }
      await worker?.terminate();
    })());
  }
}

const NOT_EMPTY = Symbol('not a read of an empty store');

/** What an empty store answers to a read or a flush (remote.ts's calls), or NOT_EMPTY for any other call. */
function emptyAnswer(method: string, args: unknown[]): unknown {
  if (method === 'store.flush') return undefined;
  if (method === 'store.list' || method === 'store.scan') return [];
  if (method !== 'store.col') return NOT_EMPTY;
  const [, op, opArgs] = args as [string, string, unknown[]];
  if (op === 'get') return undefined;
  if (op === 'getMany') return (opArgs[0] as unknown[]).map(() => undefined);
  if (op === 'query') return [];
  if (op === 'count') return 0;
  if (op === 'delete') return false;
  return NOT_EMPTY;
}

/**
 * The shortener's thread starter (FamilyManifest.startThread): with ANALYTICS_THREAD=worker, the
 * analytics thread. On the file store its store (DATA_DIR/analytics) is routed into the
 * server's, and the link-day records a version counting in one thread left in the main store
 * are moved there first (once); on Redis it writes to the same Redis over connections of its
 * own, and only its health and its close are routed (no collection).
 */
export async function startAnalyticsThread(store: Store, config: Config, log: Logger): Promise<{ store: Store; thread: AnalyticsThread } | undefined> {
  if (config.analyticsThread !== 'worker') {
    // Counted in this thread: a move into DATA_DIR/analytics cut short is finished here (its store is routed in then), and the thread's visit log replayed.
    if (config.redis === null) await finishOrClose(store, config, log);
    return undefined;
  }
  const thread = new AnalyticsThread({ config, log });
  if (config.redis !== null) return { store: routedStore(store, thread.store, new Set()), thread };
  try {
    // Started at the first visit or stats read, or now when it has records to load (a store that
    // does not open stops the start here, as the main one would), or records to move in.
    const moving = (await store.collection(LINK_DAYS).count()) > 0;
    if (moving || fs.existsSync(path.join(config.dataDir, ANALYTICS_DIR))) await thread.started();
    if (moving) await moveCollection(store, thread.store, LINK_DAYS, log);
  } catch (err) {
    await thread.close();
    await store.close();
    throw err;
  }
  return { store: routedStore(store, thread.store, ANALYTICS_COLLECTIONS), thread };
}

/** finishAnalyticsMove of LINK_DAYS, then settleAnalytics; a failure closes the store and fails the start, as the thread's own move does. */
async function finishOrClose(store: Store, config: Config, log: Logger): Promise<void> {
  try {
    await finishAnalyticsMove(store, [LINK_DAYS], log);
    await settleAnalytics(store, config, log);
  } catch (err) {
    await store.close();
    throw err;
  }
}

/**
 * For what opens the file store without the analytics thread (a server counting in its main
 * thread, `export`, `import`: FamilyManifest.settleForCli): the visit logs the thread left in
 * DATA_DIR/analytics (a crash, or a stop that could not write) replayed into the link-day
 * records, which `store` (routed) holds. Resolves with how many visits were added.
 */
export async function settleAnalytics(store: Store, config: Config, log: Logger): Promise<number> {
  if (config.redis !== null) return 0;
  const services = { store, clock: systemClock, log };
  return settleVisitLogs(path.join(config.dataDir, ANALYTICS_DIR), store, { through: () => rolledUpThrough(services), late: (late, token) => addLateClicks(services, late, token) }, log);
}

/** The analytics thread of these services, if they run one (tests, benches). */
export function analyticsThreadOf(services: Services): AnalyticsThread | undefined {
  const t = services.threads?.[SHORTENER];
  return t instanceof AnalyticsThread ? t : undefined;
}

/** The roll-up's `through` for a write of the counts (the first one makes the roll-up's record: startRollUp). */
async function rolledUpThrough(services: Pick<Services, 'store' | 'clock'>): Promise<string> {
  const rec = await services.store.collection(LINK_CLICK_ROLLUP).get(ROLLUP_ID);
  return rec?.through ?? startRollUp(services);
}

/** The shortener's analytics when the analytics thread counts (see AnalyticsThread). */
class ThreadAnalytics implements Analytics {
  readonly #thread: AnalyticsThread;
  readonly #services: Services;
  readonly #ua = new UaCache();
  readonly #sweep: NodeJS.Timeout;

  constructor(thread: AnalyticsThread, services: Services) {
    this.#thread = thread;
    this.#services = services;
    // The sweep (roll-up, old days) runs here, through the routed store, as in one thread.
    this.#sweep = setInterval(() => {
      // A file store's thread not started yet holds no records (one with records starts at once): nothing to start it for.
      if (!thread.running && services.config.redis === null) return;
      sweepAnalytics(services).catch((err: unknown) => services.log.warn('shortener: sweeping old analytics failed', err));
    }, ANALYTICS_SWEEP_MS);
    this.#sweep.unref();
  }

  record(code: string, headers: VisitHeaders): void {
    if (this.#thread.closing) return;
    const ua = this.#ua.info(headers.userAgent);
    this.#thread.put(code, ua, ua.bot ? '' : referrerHost(headers.referer), this.#services.clock.now());
  }

  /** Asks the thread; one not started (nothing counted) or closing answers `idle` instead. */
  #ask<T>(idle: T, method: string, ...args: unknown[]): Promise<T> {
    return this.#thread.closing || !this.#thread.running ? Promise.resolve(idle) : this.#thread.call<T>(method, ...args);
  }

  unwritten(code: string): Promise<{ day: string; delta: DayDelta }[]> {
    return this.#ask([], 'unwritten', code);
  }

  unwrittenClicksOf(items: readonly { code: string; days: readonly string[] }[]): Promise<{ clicks: number; last: number }[]> {
    return this.#ask(
      items.map(() => ({ clicks: 0, last: 0 })),
      'unwrittenClicksOf',
      items,
    );
  }

  drop(code: string): Promise<void> {
    return this.#ask(undefined, 'drop', code);
  }

  writes(): Promise<WriteState> {
    return this.#ask({ settled: 0, inFlight: false }, 'writes');
  }

  flush(): Promise<void> {
    return this.#ask(undefined, 'flush');
  }

  close(): Promise<void> {
    clearInterval(this.#sweep);
    return this.#thread.close();
  }
}
