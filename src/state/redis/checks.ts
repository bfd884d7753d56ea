/**
 * The start-up checks of a Redis deployment, run on every primary (the one server, the primary
 * the sentinels name, every cluster master) at start-up and again after each failover.
 */
import type { Cluster, Redis } from 'ioredis';
import type { Logger } from '../../log.js';
import { StoreError } from '../types.js';
import { primaries } from './clients.js';

export interface CheckOptions {
  allowEviction: boolean;
  /** No log line for persistence off (CLI commands). */
  quiet: boolean;
  log: Logger;
}

/** What the checks need of a connection (structural, so connection.ts can import this file). */
export interface CheckedConnection {
  readonly redis: Redis | Cluster;
  readonly topology: { readonly kind: string };
  readonly where: string;
}

/** Where one node is, for messages. */
function nodeName(conn: CheckedConnection, node: Redis): string {
  if (conn.topology.kind === 'single') return conn.where;
  // A sentinel-made connection's options keep the defaults: its socket knows where it went.
  const socket = node.stream as { remoteAddress?: string; remotePort?: number } | undefined;
  if (socket?.remoteAddress && socket.remotePort) return `${socket.remoteAddress.includes(':') ? `[${socket.remoteAddress}]` : socket.remoteAddress}:${socket.remotePort}`;
  return `${node.options.host}:${node.options.port}`;
}

/**
 * Reachable; Redis ≥ 7.0 (or Valkey); `maxmemory-policy` must be `noeviction` unless allowed
 * (an evicting Redis silently drops keys, links and limits); a log line when persistence is off
 * (acknowledged data would not survive a Redis restart). Throws StoreError UNAVAILABLE.
 */
export async function checkServers(conn: CheckedConnection, opts: CheckOptions): Promise<void> {
  const nodes = await primaries(conn.redis);
  if (nodes.length === 0) throw new StoreError('UNAVAILABLE', `Redis at ${conn.where} did not answer the start-up checks: no primary known yet`);
  await Promise.all(nodes.map((n) => checkNode(nodeName(conn, n), n, opts)));
}

async function checkNode(where: string, node: Redis, opts: CheckOptions): Promise<void> {
  let info: string;
  try {
    info = await node.info();
  } catch (err) {
    throw new StoreError('UNAVAILABLE', `Redis at ${where} did not answer the start-up checks: ${(err as Error).message}`, { cause: err });
  }
  const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
  const version = field('redis_version') ?? '?';
  const major = Number(version.split('.')[0]);
  if (Number.isFinite(major) && major < 7 && !field('valkey_version')) {
    throw new StoreError('UNAVAILABLE', `Redis ${version} at ${where} is too old: Redis 7.0 or later (or Valkey 8) is needed`);
  }
  const policy = field('maxmemory_policy');
  if (policy && policy !== 'noeviction' && !opts.allowEviction) {
    throw new StoreError(
      'UNAVAILABLE',
      `Redis at ${where} has maxmemory-policy ${policy}: it may evict keys, silently losing API keys, short links and limits. ` +
        'Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or REDIS_ALLOW_EVICTION=true to accept the loss.',
    );
  }
  const aof = field('aof_enabled') === '1';
  let save = '';
  try {
    const r = (await node.config('GET', 'save')) as string[];
    save = r[1] ?? '';
  } catch {
    save = '?'; // CONFIG may be disabled (managed Redis): assume the provider persists.
  }
  if (!aof && save.trim() === '' && !opts.quiet) {
    opts.log.warn(`Redis at ${where} has persistence off (appendonly no, no save): acknowledged data will not survive a Redis restart (use appendonly yes, appendfsync everysec)`);
  }
}
