/**
 * The Redis backend (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES): the store and the
 * cluster-wide limit primitives, on one connection. docs/scale-out.md describes the deployments.
 */
import type { Logger } from '../../log.js';
import { connectRedis, type RedisConnectOptions } from './connection.js';
import { RedisStore } from './store.js';
import { ReplicaAcks, withReplicaAcks } from './replicas.js';
import type { RedisTopology } from './topology.js';

/** REDIS_WAIT_TIMEOUT_MS's default. */
export const DEFAULT_WAIT_TIMEOUT_MS = 1000;

export { capLockKey, RedisStore, type RedisStoreOptions } from './store.js';
export { RedisConnection, connectRedis, redacted } from './connection.js';
export { RedisWindows } from './windows.js';
export { createClient, type RedisClient } from './clients.js';
export { describeTopology, parseHostList, type HostPort, type RedisTopology } from './topology.js';

export interface OpenRedisOptions {
  /** REDIS_URL (one server); or `topology` for any deployment. */
  url?: string;
  topology?: RedisTopology;
  prefix?: string;
  log: Logger;
  allowEviction?: boolean;
  /** Quiet start-up checks (CLI commands). */
  quiet?: boolean;
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** REDIS_WAIT_REPLICAS: replicas that must hold a `replicated` write before it resolves (0 = none). */
  waitReplicas?: number;
  /** REDIS_WAIT_TIMEOUT_MS: the longest wait for them. */
  waitTimeoutMs?: number;
}

/** Connects, checks every primary (see connectRedis) and returns the store. Throws StoreError UNAVAILABLE with a clear message. */
export async function openRedisStore(opts: OpenRedisOptions): Promise<RedisStore> {
  const connect: RedisConnectOptions = { log: opts.log, allowEviction: opts.allowEviction, quiet: opts.quiet };
  if (opts.url !== undefined) connect.url = opts.url;
  if (opts.topology !== undefined) connect.topology = opts.topology;
  if (opts.commandTimeoutMs !== undefined) connect.commandTimeoutMs = opts.commandTimeoutMs;
  if (opts.connectTimeoutMs !== undefined) connect.connectTimeoutMs = opts.connectTimeoutMs;
  const conn = await connectRedis(connect);
  const prefix = opts.prefix ?? 'devtoolbox:';
  // A cap's lock waits for a replica as long as a critical write does (./cap-lock.ts).
  const store = new RedisStore(conn, prefix, { lockReplicaWaitMs: opts.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS });
  if (!opts.waitReplicas) return store;
  const acks = new ReplicaAcks(conn.redis, { replicas: opts.waitReplicas, timeoutMs: opts.waitTimeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS, prefix }, conn.commandTimeoutMs);
  try {
    await acks.connect();
  } catch (err) {
    await store.close();
    throw err;
  }
  return withReplicaAcks(store, acks);
}
