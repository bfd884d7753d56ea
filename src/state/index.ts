/**
 * The state layer. Tools import from here only: the Store interface, collection definitions,
 * REMOVE and StoreError. Backends: the file store (the default, JSON files in DATA_DIR:
 * ./file/), Redis (REDIS_URL: ./redis/) and memory (tests: ./memory.ts). docs/state.md
 * describes the guarantees.
 */
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Clock } from '../core/clock.js';
import fs from 'node:fs';
import path from 'node:path';
import { openFileStore } from './file/store.js';
import { routedParts, routedStore } from './routed.js';
import { moveCollection } from './move.js';
import type { AnyCollectionDef, Store } from './types.js';

export * from './types.js';
export { createMemoryStore } from './memory.js';
export { LAZY_FLUSH_MS } from './file/committer.js';
export { openFileStore, type FileStoreOptions } from './file/store.js';

/**
 * Opens the server's store in `config.dataDir`. Throws StoreError LOCKED when another process
 * owns the dir and CORRUPT when a data file is truncated; the message says what to do. The
 * records load afterwards: call `store.preload(defs)` and answer readiness from `store.ready`.
 */
export async function openStore(config: Config, deps: { log: Logger; clock: Clock }): Promise<Store> {
  // With REDIS_URL every piece of state lives in Redis: DATA_DIR is unused and no lock is taken.
  if (config.redis) return openRedis(config, deps.log, false);
  const main = await openFileStore(config.dataDir, { log: deps.log, purpose: 'server' });
  // The analytics thread opens that store itself (the shortener's startThread); counted in this thread, the records are still read there.
  return config.analyticsThread === 'worker' ? main : withAnalyticsDir(main, config, deps.log, 'server');
}

/**
 * The file store's visit analytics (the short links' link-day records) live in a file store of
 * their own, in DATA_DIR/analytics, once the analytics thread has made it (ANALYTICS_THREAD=worker,
 * docs/shortener.md "The analytics thread"): from then on they are read and written there, by
 * whichever thread counts, and by the command-line tools.
 */
export const ANALYTICS_DIR = 'analytics';
export const ANALYTICS_COLLECTIONS: ReadonlySet<string> = new Set(['link_days']);

/** `main` with DATA_DIR/analytics routed in, when that store exists (see ANALYTICS_DIR). */
async function withAnalyticsDir(main: Store, config: Config, log: Logger, purpose: string): Promise<Store> {
  const dir = path.join(config.dataDir, ANALYTICS_DIR);
  if (!fs.existsSync(dir)) return main;
  let other: Store;
  try {
    other = await openFileStore(dir, { log, purpose });
  } catch (err) {
    await main.close();
    throw err;
  }
  return routedStore(main, other, ANALYTICS_COLLECTIONS);
}

/**
 * Finishes a move of the analytics' records into DATA_DIR/analytics that was cut short (the
 * analytics thread's first start, stopped midway: docs/shortener.md, "The analytics thread"):
 * records of `defs` routed there that the main store still holds go there now, as the thread's
 * start would move them. For what opens the store routed without starting the thread — a server
 * counting in its main thread, `export` and `import` — which would otherwise see only the
 * records already moved. Resolves with how many moved (0: nothing was left, or `store` is not
 * routed).
 */
export async function finishAnalyticsMove(store: Store, defs: readonly AnyCollectionDef[], log: Logger): Promise<number> {
  const p = routedParts(store);
  if (!p) return 0;
  let moved = 0;
  for (const def of defs) if (p.names.has(def.name)) moved += await moveCollection(p.main, p.other, def, log);
  return moved;
}

async function openRedis(config: Config, log: Logger, quiet: boolean): Promise<Store> {
  const { openRedisStore } = await import('./redis/index.js');
  return openRedisStore({
    topology: config.redis!,
    prefix: config.redisPrefix,
    log,
    allowEviction: config.redisAllowEviction,
    quiet,
    waitReplicas: config.redisWaitReplicas,
    waitTimeoutMs: config.redisWaitTimeoutMs,
  });
}

/**
 * Opens the store for a command-line tool (e.g. `devtoolbox keys set-plan`): same files, same
 * lock, so it refuses while a server runs on the dir. Close it when done.
 */
export async function openStoreForCli(config: Config, deps: { log: Logger; purpose?: string }): Promise<Store> {
  // Redis is shared: CLI commands work while servers run (no lock).
  if (config.redis) return openRedis(config, deps.log, true);
  const main = await openFileStore(config.dataDir, { log: deps.log, purpose: deps.purpose ?? 'cli' });
  return withAnalyticsDir(main, config, deps.log, deps.purpose ?? 'cli');
}

/** What a readiness probe should say of the store (see docs/state.md, Start-up and readiness). */
export type StoreReadiness =
  | { ready: true }
  | { ready: false; status: 'starting' }
  | { ready: false; status: 'storage_unavailable'; reason: string; since: string };

/**
 * For `GET /healthz`: not ready while collections load (answer 503 `starting`) or while the
 * storage fails (503, with the reason); ready otherwise.
 */
export function storeReadiness(store: Store): StoreReadiness {
  if (!store.ready) return { ready: false, status: 'starting' };
  const h = store.health();
  return h.ok ? { ready: true } : { ready: false, status: 'storage_unavailable', reason: h.reason, since: h.since };
}
