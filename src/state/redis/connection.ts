/**
 * The Redis connection of one process, for any topology (./topology.ts: REDIS_URL, Sentinel,
 * Cluster): options that bound the time of every command (no offline queue: a call made while
 * Redis is away fails at once with UNAVAILABLE instead of piling up), start-up checks on every
 * primary (again after a failover), and the health that /healthz reports.
 */
import { Cluster } from 'ioredis';
import type { Logger } from '../../log.js';
import { StoreError, type StoreHealth } from '../types.js';
import { checkServers } from './checks.js';
import { connectWithin, createClient, probeTls, type RedisClient } from './clients.js';
import { describeTopology, redactedUrl, topologyVariable, type RedisTopology } from './topology.js';

export { redisOptions, type RedisClient } from './clients.js';
export type { RedisTopology } from './topology.js';

export interface RedisConnectOptions {
  /** REDIS_URL; or `topology` for Sentinel and Cluster. */
  url?: string;
  topology?: RedisTopology;
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

/** Whether an ioredis failure means "Redis is away or refusing writes" (→ UNAVAILABLE) rather than a bug. */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return /^(OOM|LOADING|READONLY|MASTERDOWN|BUSY|NOREPLICAS|CLUSTERDOWN|TRYAGAIN|MISCONF|MOVED|ASK)/.test(err.message);
  return true;
}

/** The topology of RedisConnectOptions (`url` is the single-server shorthand). */
export function topologyOf(opts: { url?: string; topology?: RedisTopology }): RedisTopology {
  if (opts.topology) return opts.topology;
  if (opts.url) return { kind: 'single', url: opts.url };
  throw new StoreError('UNAVAILABLE', 'no Redis given: set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES');
}

/** A connection with its health, shared by the store and the cluster-wide primitives. */
export class RedisConnection {
  readonly redis: RedisClient;
  /** Where it connects, for messages (no password). */
  readonly where: string;
  readonly topology: RedisTopology;
  #down: { reason: string; since: string } | null = null;
  /** Set when a re-check after a failover finds an unsafe primary (e.g. an evicting one). */
  #unsafe: { reason: string; since: string } | null = null;
  #probing = false;
  #lastError = '';
  #closed = false;
  #stalled = false;
  #recheck: (() => void) | null = null;
  #recheckTimer: NodeJS.Timeout | undefined;

  constructor(
    topology: RedisTopology | string,
    readonly log: Logger,
    readonly commandTimeoutMs = DEFAULT_COMMAND_TIMEOUT_MS,
  ) {
    this.topology = typeof topology === 'string' ? { kind: 'single', url: topology } : topology;
    this.where = describeTopology(this.topology);
    this.redis = createClient(this.topology, commandTimeoutMs);
    this.redis.on('error', (err: Error) => {
      this.#lastError = err.message;
    });
    // Cluster node errors arrive here, not on 'error'.
    if (this.redis instanceof Cluster) this.redis.on('node error', (err: Error) => (this.#lastError = err.message));
    this.redis.on('ready', () => {
      if (this.#down) log.info(`Redis is reachable again (${this.where})`);
      const wasDown = this.#down !== null;
      this.#down = null;
      this.#stalled = false;
      // A sentinel reconnect may land on a promoted replica: check it as at start-up.
      if (wasDown) this.#scheduleRecheck();
    });
    // A cluster failover or resharding changes the set of masters: check them again.
    if (this.redis instanceof Cluster) {
      const cluster = this.redis;
      let masters = '';
      const changed = () => {
        const now = cluster
          .nodes('master')
          .map((n) => `${n.options.host}:${n.options.port}`)
          .sort()
          .join(',');
        if (now !== masters) {
          masters = now;
          this.#scheduleRecheck();
        }
      };
      cluster.on('refresh', changed);
      cluster.on('+node', changed);
    }
    const lost = () => {
      if (this.#closed || this.#down) return;
      this.#down = { reason: `Redis unreachable (${this.where})${this.#lastError ? `: ${this.#lastError}` : ''}`, since: new Date().toISOString() };
      log.warn(`lost the connection to Redis (${this.where}); calls that need state answer 503 until it is back`);
    };
    this.redis.on('close', lost);
    this.redis.on('reconnecting', lost);
  }

  /** The url of a single-server connection (REDIS_URL), for messages; the topology otherwise. */
  get url(): string {
    return this.topology.kind === 'single' ? this.topology.url : this.where;
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
    if (this.#unsafe) return { ok: false, reason: this.#unsafe.reason, since: this.#unsafe.since };
    return { ok: true };
  }

  /** Runs one Redis operation; connection failures and timeouts become StoreError UNAVAILABLE. */
  async run<T>(what: string, fn: (r: RedisClient) => Promise<T>): Promise<T> {
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
          this.#down = { reason: `Redis at ${this.where} does not answer (command timeout)`, since: new Date().toISOString() };
          this.log.warn(`Redis at ${this.where} does not answer within the command timeout; calls that need state answer 503`);
        }
        throw new StoreError('UNAVAILABLE', `Redis ${what} failed: ${(err as Error).message}`, { cause: err });
      }
      throw err;
    }
  }

  #recovered(): void {
    this.#stalled = false;
    if (this.#down) this.log.info(`Redis at ${this.where} answers again`);
    this.#down = null;
  }

  /**
   * Runs `check` (the start-up checks) again after a failover or topology change, once the
   * changes settle; a failure makes /healthz report it (and is logged) — calls go on.
   */
  watchServers(check: () => Promise<void>): void {
    this.#recheck = () => {
      if (this.#closed) return;
      check().then(
        () => {
          if (this.#unsafe) this.log.info(`Redis at ${this.where} passes the start-up checks again`);
          this.#unsafe = null;
        },
        (err: unknown) => {
          if (err instanceof StoreError && err.code === 'UNAVAILABLE' && /does not answer|did not answer/.test(err.message)) return; // still switching over: the next event checks again
          const reason = (err as Error).message;
          if (this.#unsafe?.reason !== reason) this.log.error(`after a Redis failover: ${reason}`);
          this.#unsafe = { reason, since: this.#unsafe?.since ?? new Date().toISOString() };
        },
      );
    };
  }

  #scheduleRecheck(): void {
    if (!this.#recheck || this.#closed) return;
    clearTimeout(this.#recheckTimer);
    this.#recheckTimer = setTimeout(() => this.#recheck?.(), 200);
    this.#recheckTimer.unref();
  }

  async connect(timeoutMs: number): Promise<void> {
    try {
      await connectWithin(this.redis, timeoutMs);
    } catch (err) {
      const variable = topologyVariable(this.topology);
      const fallback = variable === 'REDIS_URL' ? 'unset REDIS_URL' : `unset ${variable}`;
      // OpenSSL's messages end in a newline: one line for the log.
      let reason = (this.#lastError || (err as Error).message).replace(/\s+/g, ' ').trim();
      if (!CERT_FAILURE.test(reason)) {
        // The client's own words may be generic ("Connection is closed"): one handshake says why.
        const tls = await probeTls(this.topology, 1000);
        if (tls) reason = `${reason} (${tls})`;
      }
      throw new StoreError(
        'UNAVAILABLE',
        `cannot reach Redis at ${this.where} (${variable}): ${reason}. ${tlsHint(reason, this.topology) ?? `Start Redis or fix ${variable}`}; ${fallback} to use the embedded store in DATA_DIR.`,
        { cause: err },
      );
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#recheckTimer);
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
      else this.redis.disconnect();
    } catch {
      this.redis.disconnect();
    }
  }
}

/**
 * What to fix when the connection failed in the TLS handshake (OpenSSL's words are terse): a
 * certificate no configured CA signed, a name that does not match, a client certificate the
 * server wants, or TLS against a plain port (or the reverse). Undefined for other failures.
 */
function tlsHint(reason: string, t: RedisTopology): string | undefined {
  const tls = t.tls !== undefined || (t.kind === 'single' && t.url.toLowerCase().startsWith('rediss:'));
  if (NAME_MISMATCH.test(reason)) return 'The Redis server\'s TLS certificate is for another name: set REDIS_TLS_SERVERNAME to the name it carries, or dial that name';
  if (CERT_FAILURE.test(reason)) return 'The Redis server\'s TLS certificate is not signed by a trusted CA: set REDIS_TLS_CA_FILE to the CA that signed it';
  if (tls && /alert|handshake|certificate required|wrong version number|packet length too long|ECONNRESET|socket disconnected|Connection is closed|socket hang up/i.test(reason)) {
    return 'The TLS handshake with Redis failed: check that the port speaks TLS (tls-port), and whether the server requires a client certificate (REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE)';
  }
  if (!tls && /Connection is closed|ECONNRESET|Protocol error/i.test(reason)) return `Redis closed the connection: if it only speaks TLS, use ${t.kind === 'single' ? 'rediss://' : 'REDIS_TLS=on'}`;
  return undefined;
}

/** Node's words for a server certificate whose name is not the one dialled (or REDIS_TLS_SERVERNAME). */
const NAME_MISMATCH = /altnames|Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME/i;
/** …and for one no trusted CA signed (or an expired one). */
const CERT_FAILURE = /self[- ]signed|issuer certificate|unable to verify|UNABLE_TO_|CERT_HAS_EXPIRED|certificate has expired|altnames|Hostname\/IP does not match/i;

/** The URL without its password, for messages. */
export const redacted = redactedUrl;

/**
 * Connects and checks every primary (./checks.ts): reachable within the time, Redis ≥ 7,
 * `maxmemory-policy` `noeviction` unless allowed, a log line when persistence is off. The
 * checks run again after each failover (see RedisConnection.watchServers).
 */
export async function connectRedis(opts: RedisConnectOptions): Promise<RedisConnection> {
  const conn = new RedisConnection(topologyOf(opts), opts.log, opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS);
  await conn.connect(opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS);
  const check = (quiet: boolean) => checkServers(conn, { allowEviction: opts.allowEviction ?? false, quiet, log: opts.log });
  try {
    await check(opts.quiet ?? false);
  } catch (err) {
    await conn.close();
    throw err;
  }
  conn.watchServers(() => check(opts.quiet ?? false));
  return conn;
}
