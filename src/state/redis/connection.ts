/**
 * The Redis connection of one process (REDIS_URL): options that bound the time of every
 * command (no offline queue: a call made while Redis is away fails at once with UNAVAILABLE
 * instead of piling up), start-up checks, and the health that /healthz reports.
 */
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../../log.js';
import { StoreError, type StoreHealth } from '../types.js';

export interface RedisConnectOptions {
  url: string;
  log: Logger;
  /** Longest wait for the first connection (ms). */
  connectTimeoutMs?: number;
  /** Longest one command may take before it fails with UNAVAILABLE (ms). */
  commandTimeoutMs?: number;
  /** Start even when Redis may evict keys (REDIS_ALLOW_EVICTION). */
  allowEviction?: boolean;
  /** Skip the start-up checks' log lines (CLI commands). */
  quiet?: boolean;
}

export const DEFAULT_COMMAND_TIMEOUT_MS = 2000;
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** ioredis options for a REDIS_URL (`redis://`, `rediss://`, `unix:///path.sock`). */
export function redisOptions(url: string, commandTimeoutMs: number): { url?: string; options: RedisOptions } {
  const options: RedisOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 2000),
    // Reconnect forever, at most a second apart: the process recovers when Redis is back.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    enableAutoPipelining: true,
  };
  const u = new URL(url);
  if (u.protocol === 'unix:') {
    options.path = decodeURIComponent(u.pathname);
    if (u.password) options.password = decodeURIComponent(u.password);
    if (u.username) options.username = decodeURIComponent(u.username);
    const db = u.searchParams.get('db');
    if (db) options.db = Number(db);
    return { options };
  }
  return { url, options };
}

/** Whether an ioredis failure means "Redis is away or refusing writes" (→ UNAVAILABLE) rather than a bug. */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return /^(OOM|LOADING|READONLY|MASTERDOWN|BUSY|NOREPLICAS|CLUSTERDOWN|TRYAGAIN|MISCONF)/.test(err.message);
  return true;
}

/** A connection with its health, shared by the store and the cluster-wide primitives. */
export class RedisConnection {
  readonly redis: Redis;
  #down: { reason: string; since: string } | null = null;
  #probing = false;
  #lastError = '';
  #closed = false;

  constructor(
    readonly url: string,
    readonly log: Logger,
    commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS,
  ) {
    const { url: u, options } = redisOptions(url, commandTimeoutMs);
    this.redis = u ? new Redis(u, options) : new Redis(options);
    this.redis.on('error', (err: Error) => {
      this.#lastError = err.message;
    });
    this.redis.on('ready', () => {
      if (this.#down) log.info(`Redis is reachable again (${redacted(url)})`);
      this.#down = null;
      this.#stalled = false;
    });
    const lost = () => {
      if (this.#closed || this.#down) return;
      this.#down = { reason: `Redis unreachable (${redacted(url)})${this.#lastError ? `: ${this.#lastError}` : ''}`, since: new Date().toISOString() };
      log.warn(`lost the connection to Redis (${redacted(url)}); calls that need state answer 503 until it is back`);
    };
    this.redis.on('close', lost);
    this.redis.on('reconnecting', lost);
  }

  health(): StoreHealth {
    if (this.#stalled && this.redis.status === 'ready' && !this.#probing) {
      // Without traffic, the health probe itself finds out when Redis answers again.
      this.#probing = true;
      this.redis
        .ping()
        .then(() => this.#recovered(), () => {})
        .finally(() => (this.#probing = false));
    }
    if (this.#down) return { ok: false, reason: this.#down.reason, since: this.#down.since };
    if (this.redis.status !== 'ready') return { ok: false, reason: `Redis connection ${this.redis.status}`, since: new Date().toISOString() };
    return { ok: true };
  }

  /** Runs one Redis operation; connection failures and timeouts become StoreError UNAVAILABLE. */
  async run<T>(what: string, fn: (r: Redis) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreError('CLOSED', 'The store is closed');
    try {
      const out = await fn(this.redis);
      if (this.#stalled) this.#recovered();
      return out;
    } catch (err) {
      if (err instanceof StoreError) throw err;
      if (isUnavailable(err)) {
        // Connected but not answering (a stalled or overloaded Redis): unhealthy until a command succeeds.
        if (/timed out/i.test((err as Error).message) && !this.#down) {
          this.#stalled = true;
          this.#down = { reason: `Redis at ${redacted(this.url)} does not answer (command timeout)`, since: new Date().toISOString() };
          this.log.warn(`Redis at ${redacted(this.url)} does not answer within the command timeout; calls that need state answer 503`);
        }
        throw new StoreError('UNAVAILABLE', `Redis ${what} failed: ${(err as Error).message}`, { cause: err });
      }
      throw err;
    }
  }

  #stalled = false;

  #recovered(): void {
    this.#stalled = false;
    if (this.#down) this.log.info(`Redis at ${redacted(this.url)} answers again`);
    this.#down = null;
  }

  async connect(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.redis.connect(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(timeoutMs / 1000)} s`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      this.redis.disconnect();
      throw new StoreError(
        'UNAVAILABLE',
        `cannot reach Redis at ${redacted(this.url)} (REDIS_URL): ${this.#lastError || (err as Error).message}. Start Redis or fix REDIS_URL; unset REDIS_URL to use the embedded store in DATA_DIR.`,
        { cause: err },
      );
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
      else this.redis.disconnect();
    } catch {
      this.redis.disconnect();
    }
  }
}

/** The URL without its password, for messages. */
export function redacted(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'REDIS_URL';
  }
}

/**
 * Connects and checks the server: reachable within the time; `maxmemory-policy` must be
 * `noeviction` unless allowed (an evicting Redis silently drops keys, links and limits);
 * logs once when persistence is off (acknowledged data would not survive a Redis restart).
 */
export async function connectRedis(opts: RedisConnectOptions): Promise<RedisConnection> {
  const conn = new RedisConnection(opts.url, opts.log, opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS);
  await conn.connect(opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  try {
    const info = await conn.redis.info();
    const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim();
    const version = field('redis_version') ?? '?';
    const major = Number(version.split('.')[0]);
    if (Number.isFinite(major) && major < 7 && !field('valkey_version')) {
      throw new StoreError('UNAVAILABLE', `Redis ${version} at ${redacted(opts.url)} is too old: Redis 7.0 or later (or Valkey 8) is needed`);
    }
    const policy = field('maxmemory_policy');
    if (policy && policy !== 'noeviction' && !opts.allowEviction) {
      throw new StoreError(
        'UNAVAILABLE',
        `Redis at ${redacted(opts.url)} has maxmemory-policy ${policy}: it may evict keys, silently losing API keys, short links and limits. ` +
          'Set maxmemory-policy noeviction (CONFIG SET maxmemory-policy noeviction, and in redis.conf), or REDIS_ALLOW_EVICTION=true to accept the loss.',
      );
    }
    const aof = field('aof_enabled') === '1';
    let save = '';
    try {
      const r = (await conn.redis.config('GET', 'save')) as string[];
      save = r[1] ?? '';
    } catch {
      save = '?'; // CONFIG may be disabled (managed Redis): assume the provider persists.
    }
    if (!aof && save.trim() === '' && !opts.quiet) {
      opts.log.warn(`Redis at ${redacted(opts.url)} has persistence off (appendonly no, no save): acknowledged data will not survive a Redis restart (use appendonly yes, appendfsync everysec)`);
    }
  } catch (err) {
    await conn.close();
    if (err instanceof StoreError) throw err;
    throw new StoreError('UNAVAILABLE', `Redis at ${redacted(opts.url)} did not answer the start-up checks: ${(err as Error).message}`, { cause: err });
  }
  return conn;
}
