/**
 * The analytics thread's entry (./analytics-thread.ts): opens the thread's own file store,
 * drains the ring of visits every DRAIN_MS into a VisitAnalytics (which writes the link-day
 * records, as in one thread), and answers the main thread's calls: what is not written yet,
 * drops, flushes, the close, and the store's own calls (../../state/remote.ts).
 */
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { parentPort, receiveMessageOnPort, workerData, type MessagePort } from 'node:worker_threads';
import type { Logger } from '../../log.js';
import { NO_METRICS } from '../../metrics.js';
import { RpcPeer } from '../../lib/rpc.js';
import path from 'node:path';
import type { Config } from '../../config.js';
import { openFileStore } from '../../state/file/store.js';
import { ANALYTICS_DIR, openStoreForCli } from '../../state/index.js';
import { storeHandlers } from '../../state/remote.js';
import type { Store, StoreHealth } from '../../state/types.js';
import { systemClock } from '../../core/clock.js';
import { VisitAnalytics, type AnalyticsServices } from './analytics.js';
import { collectUnreplayed, visitsIn, VisitLog } from './visit-log.js';
import { LINK_DAYS } from './analytics-counters.js';
import type { UaInfo } from './analytics-ua.js';
import type { LateClicks } from './clicks.js';
import { DRAIN_MS, GAUGES_AT, HEADER, PROFILE_AT, SLOT, SLOTS, TIME_AT, type ProfileMessage } from './analytics-thread.js';

interface Data {
  /** The server's config: the file store's DATA_DIR, or Redis. */
  config: Config;
  sab: SharedArrayBuffer;
  profilePort: MessagePort;
}

const data = workerData as Data;
const LEVELS = ['debug', 'info', 'warn', 'error'] as const;
const minLevel = data.config.logLevel === 'silent' ? LEVELS.length : Math.max(0, LEVELS.indexOf(data.config.logLevel));

const ends = new Int32Array(data.sab, 0, 2);
const gaugesOut = new Float64Array(data.sab, GAUGES_AT, 2);
const bytes = Buffer.from(data.sab, HEADER);
const view = new DataView(data.sab, HEADER);
/** The profiles by number (ProfileDef), as the main thread sent them: numbers only grow, so the map's order is theirs. */
const profiles = new Map<number, { ua: UaInfo; referrer: string }>();
/** Profiles to forget (ProfileMessage `forget`), oldest first: those numbered below `below`, once the ring is read past `at`. */
const forgets: { below: number; at: number }[] = [];

let store: Store | undefined;
let analytics: VisitAnalytics | undefined;
let drainTimer: NodeJS.Timeout | undefined;
let healthTimer: NodeJS.Timeout | undefined;
let closing: Promise<void> | undefined;

const rpc = new RpcPeer(parentPort!, {
  start,
  unwritten: (code: string) => (drain(), analytics!.unwritten(code)),
  unwrittenClicksOf: (items: { code: string; days: string[] }[]) => (drain(), analytics!.unwrittenClicksOf(items)),
  drop: (code: string) => (drain(), analytics!.drop(code)),
  writes: () => analytics!.writes(),
  flush: async () => {
    drain();
    await analytics!.flush();
    publishGauges();
  },
  dayWriters: () => (drain(), analytics!.dayWriters),
  'test.refuseDayWrites': refuseDayWrites,
  'test.profiles': () => (drain(), profiles.size),
  rolled: () => analytics?.rolledUp(),
  // The tests' way to stop this thread as a failure would (test/analytics-thread.test.ts).
  'test.exit': () => process.exit(70),
  close,
  // The store's own calls (a call before `start` resolved is refused).
  ...storeHandlers(() => {
    if (!store) throw new Error('the analytics store is not open');
    return store;
  }, [LINK_DAYS]),
});

/** Log lines go to the main thread's logger. */
const log: Logger = Object.fromEntries(
  LEVELS.map((level, i) => [level, (msg: string, extra?: unknown) => i >= minLevel && rpc.notify('log', level, msg, extra === undefined ? undefined : extra instanceof Error ? (extra.stack ?? extra.message) : String(extra))]),
) as unknown as Logger;

/**
 * ANALYTICS_THREAD_PROF=<dir> (benches only): a CPU profile of this thread from its start to its
 * close, written there as analytics-thread-<pid>-<ms>.cpuprofile (--cpu-prof does not reach it:
 * the thread gets no node flags).
 */
const profDir = process.env.ANALYTICS_THREAD_PROF;
const profiler = profDir ? new Session() : undefined;
async function writeProfile(): Promise<void> {
  if (!profiler) return;
  const { profile } = await profiler.post('Profiler.stop');
  fs.mkdirSync(profDir!, { recursive: true });
  fs.writeFileSync(path.join(profDir!, `analytics-thread-${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(profile));
}

async function start(): Promise<void> {
  const { config } = data;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  // The file store's own dir; on Redis the same Redis as the main thread, over connections of this thread.
  store = config.redis === null ? await openFileStore(path.join(config.dataDir, ANALYTICS_DIR), { log, purpose: 'analytics thread' }) : await openStoreForCli(config, { log, purpose: 'analytics thread' });
  await store.preload([LINK_DAYS]);
  const services: AnalyticsServices = { store, clock: systemClock, log, metrics: NO_METRICS };
  // On the file store, every visit is logged (fsynced every 250 ms) and the records written in batches of 10 s (./visit-log.ts).
  const visitLog = config.redis === null ? new VisitLog(path.join(config.dataDir, ANALYTICS_DIR), log) : undefined;
  analytics = new VisitAnalytics(services, {
    sweep: false,
    ...(visitLog ? { visitLog: { log: visitLog, batchMs: config.analyticsBatchMs } } : {}),
    rollUp: {
      through: () => rpc.call<string>('through'),
      late: (late: LateClicks[], token: string) => rpc.call<void>('late', late, token),
    },
  });
  // What a crash left in the visit log and not in the records: counted again before any visit (VisitAnalytics.restore).
  if (visitLog && visitLog.left.length > 0) {
    const due = await collectUnreplayed(visitLog.left, store, log);
    analytics.restore(due);
    const n = visitsIn(due);
    if (n > 0) log.warn(`${n} visits the link-day records did not hold yet (a crash, or a stop that could not write them) are counted again from the visit log`);
  }
  drainTimer = setInterval(drain, DRAIN_MS);
  let last = '';
  healthTimer = setInterval(() => {
    const h: StoreHealth = store!.health();
    const text = JSON.stringify(h);
    if (text !== last) rpc.notify('health', h);
    last = text;
  }, 1_000);
}

/**
 * The tests' way to make this thread's store refuse the link-day writes, as they make the main
 * thread's refuse them (a spy): the next `times` addMany calls (-1: all, 0: none) reject.
 * Resolves with how many calls were made since the last call of it. Not reachable from outside
 * the process (the main thread's AnalyticsThread.call only).
 */
let refusing: { left: number; calls: number } | undefined;
function refuseDayWrites(times: number): number {
  const col = store!.collection(LINK_DAYS);
  if (refusing === undefined) {
    const addMany = col.addMany.bind(col);
    col.addMany = (items, opts) => {
      if (refusing === undefined) return addMany(items, opts);
      refusing.calls++;
      if (refusing.left === 0) return addMany(items, opts);
      if (refusing.left > 0) refusing.left--;
      return Promise.reject(new Error('storage failing'));
    };
  }
  const calls = refusing?.calls ?? 0;
  refusing = { left: times, calls: 0 };
  return calls;
}

/** Takes the main thread's profile messages: new profiles, and visits the full ring had no slot for. */
function takeMessages(): void {
  for (let m = receiveMessageOnPort(data.profilePort); m !== undefined; m = receiveMessageOnPort(data.profilePort)) {
    const msg = m.message as ProfileMessage;
    if ('def' in msg) profiles.set(msg.def.no, { ua: msg.def.ua, referrer: msg.def.referrer });
    else if ('forget' in msg) forgets.push(msg.forget);
    else count(msg.visit[0], msg.visit[1], msg.visit[2]);
  }
}

function count(code: string, no: number, now: number): void {
  let p = profiles.get(no);
  // Posted before the visit's slot was: there by now.
  if (p === undefined) {
    takeMessages();
    p = profiles.get(no);
    if (p === undefined) return void log.error(`a visit of profile ${no}, which was never sent, is not counted`);
  }
  analytics!.count(code, p.ua, p.referrer, now);
}

/** The gauges of what this thread counted and has not written, for the main thread's metrics (see HEADER). */
function publishGauges(): void {
  const g = analytics!.gauges();
  gaugesOut[0] = g.entries;
  gaugesOut[1] = g.entries > 0 ? performance.timeOrigin + performance.now() - g.oldestSeconds * 1000 : 0;
}

/** Counts the visits in the ring. */
function drain(): void {
  if (!analytics) return;
  takeMessages();
  const written = Atomics.load(ends, 0);
  let read = Atomics.load(ends, 1);
  while (read !== written) {
    const at = (read & (SLOTS - 1)) * SLOT;
    count(bytes.toString('latin1', at + 1, at + 1 + bytes[at]!), view.getUint32(at + PROFILE_AT), view.getFloat64(at + TIME_AT));
    read = (read + 1) | 0;
    // Slots given back as they are read, not only at the end: the main thread's ring is not full for longer than it is.
    if ((read & 4095) === 0) Atomics.store(ends, 1, read);
  }
  // Before the read counter moves: the main thread never sees a visit neither in the ring nor in the gauges.
  publishGauges();
  Atomics.store(ends, 1, read);
  // Every visit that could name them is counted (counters compared modulo 2^32).
  while (forgets.length > 0 && ((read - forgets[0]!.at) | 0) >= 0) {
    const { below } = forgets.shift()!;
    for (const no of profiles.keys()) {
      if (((no - below) | 0) >= 0) break;
      profiles.delete(no);
    }
  }
}

function close(): Promise<void> {
  return (closing ??= (async () => {
    clearInterval(drainTimer);
    clearInterval(healthTimer);
    drain();
    await analytics?.close();
    await store?.close();
    await writeProfile().catch((err: unknown) => log.error('the analytics thread\'s profile was not written', err));
    // The answer goes out first; then the ports close and the thread ends on its own (terminate()
    // would cut short what the thread still does as it ends).
    setImmediate(() => {
      data.profilePort.close();
      parentPort!.close();
    });
  })());
}
