/**
 * The Redis backend (REDIS_URL): the store and the cluster-wide limit primitives, on one
 * connection. docs/scale-out.md describes the deployment.
 */
import type { Logger } from '../../log.js';
import { connectRedis, type RedisConnectOptions } from './connection.js';
import { RedisStore } from './store.js';

export { RedisStore } from './store.js';
export { RedisConnection, connectRedis, redacted } from './connection.js';
export { RedisWindows } from './windows.js';

export interface OpenRedisOptions {
  url: string;
  prefix?: string;
  log: Logger;
  allowEviction?: boolean;
  /** Quiet start-up checks (CLI commands). */
  quiet?: boolean;
  commandTimeoutMs?: number;
  connectTimeoutMs?: number;
}

/** Connects, checks the server (see connectRedis) and returns the store. Throws StoreError UNAVAILABLE with a clear message. */
export async function openRedisStore(opts: OpenRedisOptions): Promise<RedisStore> {
  const connect: RedisConnectOptions = { url: opts.url, log: opts.log, allowEviction: opts.allowEviction, quiet: opts.quiet };
  if (opts.commandTimeoutMs !== undefined) connect.commandTimeoutMs = opts.commandTimeoutMs;
  if (opts.connectTimeoutMs !== undefined) connect.connectTimeoutMs = opts.connectTimeoutMs;
  const conn = await connectRedis(connect);
  return new RedisStore(conn, opts.prefix ?? 'devtoolbox:');
}
