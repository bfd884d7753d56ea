/**
 * The Redis backend (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES): the store and the
 * cluster-wide limit primitives, on one connection. docs/scale-out.md describes the deployments.
 */
import type { Logger } from '../../log.js';
import { connectRedis, type RedisConnectOptions } from './connection.js';
import { RedisStore } from './store.js';
import type { RedisTopology } from './topology.js';

export { RedisStore } from './store.js';
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
}

/** Connects, checks every primary (see connectRedis) and returns the store. Throws StoreError UNAVAILABLE with a clear message. */
export async function openRedisStore(opts: OpenRedisOptions): Promise<RedisStore> {
  const connect: RedisConnectOptions = { log: opts.log, allowEviction: opts.allowEviction, quiet: opts.quiet };
  if (opts.url !== undefined) connect.url = opts.url;
  if (opts.topology !== undefined) connect.topology = opts.topology;
  if (opts.commandTimeoutMs !== undefined) connect.commandTimeoutMs = opts.commandTimeoutMs;
  if (opts.connectTimeoutMs !== undefined) connect.connectTimeoutMs = opts.connectTimeoutMs;
  const conn = await connectRedis(connect);
  return new RedisStore(conn, opts.prefix ?? 'devtoolbox:');
}
