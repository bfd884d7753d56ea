/**
 * The ioredis client of each topology (./topology.ts), with the same fail-fast options: no
 * offline queue, a bounded time per command, reconnect forever at most a second apart.
 */
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { RedisAuth, RedisTls, RedisTopology } from './topology.js';

/** The client of any topology: store code uses the commands both share. */
export type RedisClient = Redis | Cluster;

/** Options every data connection shares: fail fast while Redis is away, recover by itself. */
export function baseOptions(commandTimeoutMs: number): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(commandTimeoutMs, 2000),
    // Reconnect forever, at most a second apart: the process recovers when Redis is back.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    enableAutoPipelining: true,
  };
}

/** ioredis options for a REDIS_URL (`redis://`, `rediss://`, `unix:///path.sock`). */
export function redisOptions(url: string, commandTimeoutMs: number): { url?: string; options: RedisOptions } {
  const options = baseOptions(commandTimeoutMs);
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

/** Node's TLS options of REDIS_TLS_* (the name checked is REDIS_TLS_SERVERNAME, else the host dialled). */
export function tlsOptions(t: RedisTls): ConnectionOptions {
  const o: ConnectionOptions = {};
  if (t.ca) o.ca = t.ca;
  if (t.cert) o.cert = t.cert;
  if (t.key) o.key = t.key;
  if (t.servername) o.servername = t.servername;
  return o;
}

/**
 * One TLS handshake with the first endpoint of a topology, for a start-up failure's message:
 * ioredis hides a sentinel's handshake error behind "All sentinels are unreachable". The
 * error's text, or undefined when the handshake succeeds (or the topology has no TLS).
 */
export function probeTls(t: RedisTopology, timeoutMs: number): Promise<string | undefined> {
  // Under Sentinel the first endpoint is a sentinel: its own TLS setting.
  const tlsOf = t.kind === 'sentinel' ? t.sentinelTls : t.tls;
  if (!tlsOf) return Promise.resolve(undefined);
  let host: string;
  let port: number;
  if (t.kind === 'single') {
    const u = new URL(t.url);
    host = u.hostname.replace(/^\[|\]$/g, '');
    port = Number(u.port || 6379);
  } else ({ host, port } = (t.kind === 'sentinel' ? t.sentinels : t.nodes)[0]!);
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port, ...tlsOptions(tlsOf) });
    const done = (out: string | undefined) => {
      socket.destroy();
      resolve(out === undefined ? undefined : `TLS to ${host.includes(':') ? `[${host}]` : host}:${port}: ${out}`);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.once('secureConnect', () => done(undefined));
    socket.once('error', (err) => done(err.message));
  });
}

/** A demoted primary answers writes with READONLY: reconnect (through the sentinels) instead of failing on. */
const reconnectOnReadonly = (err: Error): boolean => err.message.startsWith('READONLY');

function auth(t: RedisAuth): RedisOptions {
  const o: RedisOptions = {};
  if (t.username) o.username = t.username;
  if (t.password) o.password = t.password;
  return o;
}

/** The client for a topology, not yet connected (lazyConnect). */
export function createClient(t: RedisTopology, commandTimeoutMs: number): RedisClient {
  if (t.kind === 'single') {
    const { url, options } = redisOptions(t.url, commandTimeoutMs);
    if (t.tls) options.tls = tlsOptions(t.tls);
    return url ? new Redis(url, options) : new Redis(options);
  }
  if (t.kind === 'sentinel') {
    return new Redis({
      ...baseOptions(commandTimeoutMs),
      ...auth(t),
      sentinels: t.sentinels,
      name: t.name,
      ...(t.sentinelPassword ? { sentinelPassword: t.sentinelPassword } : {}),
      // TLS to the primary they name (REDIS_TLS) and to the sentinels (as the primary unless
      // REDIS_SENTINEL_TLS says otherwise), with the same CA and client certificate.
      ...(t.tls ? { tls: tlsOptions(t.tls), enableTLSForSentinelMode: true } : {}),
      ...(t.sentinelTls ? { sentinelTLS: tlsOptions(t.sentinelTls) } : {}),
      // Each sentinel must answer within the command time; all away → try again within a second.
      sentinelCommandTimeout: commandTimeoutMs,
      sentinelRetryStrategy: (times: number) => Math.min(50 * times, 1000),
      // The client finds the new primary when the old one's socket closes (crash, kill) or
      // when it answers READONLY (a graceful switch demotes it). ioredis' failoverDetector is
      // left off: every sentinel announces '+switch-master' on its own, and each late
      // announcement dropped the connection already on the new primary (a second 503 blip).
      reconnectOnError: reconnectOnReadonly,
    });
  }
  const { lazyConnect: _l, enableOfflineQueue: _q, enableAutoPipelining: _p, retryStrategy: _r, ...node } = baseOptions(commandTimeoutMs);
  const options: ClusterOptions = {
    lazyConnect: true,
    enableOfflineQueue: false,
    enableAutoPipelining: true,
    // Writes and reads go to masters: replicas may lag, and the store promises read-your-writes.
    scaleReads: 'master',
    // MOVED/ASK during a resharding or failover are followed; CLUSTERDOWN and TRYAGAIN are
    // retried briefly (the command did not run). A command whose connection closed under it is
    // NOT sent again (retryDelayOnFailover 0): it may have run with only its reply lost, and a
    // second run would insert twice, count twice or report a fresh insert as taken; it fails
    // as STORAGE_UNAVAILABLE ("not known to have happened"), as on one Redis or Sentinel.
    maxRedirections: 16,
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    clusterRetryStrategy: (times) => Math.min(50 * times, 1000),
    slotsRefreshTimeout: Math.max(commandTimeoutMs, 1000),
    // Besides MOVED, learn of failovers every few seconds, so the start-up checks run again
    // on a new master even when no call touched its slots yet.
    slotsRefreshInterval: 5000,
    redisOptions: { ...node, ...auth(t), reconnectOnError: reconnectOnReadonly, ...(t.tls ? { tls: tlsOptions(t.tls) } : {}) },
    // With TLS a seed given by name is dialled by that name, so its certificate's name matches
    // (ioredis would otherwise resolve it and check the certificate against the address).
    ...(t.tls ? { dnsLookup: (address: string, callback: (err: NodeJS.ErrnoException | null, address: string) => void) => callback(null, address) } : {}),
  };
  return new Cluster(t.nodes, options);
}

/**
 * Connects `client` (lazyConnect), or fails within `ms` (the main connection at start-up, the
 * caps' locks, the replica acknowledgements): ioredis' Cluster connect can stay pending for good
 * when the cluster reports `cluster_state:fail` as it starts (its ready check fails and it
 * reconnects through a new promise). On failure the client is disconnected.
 */
export async function connectWithin(client: RedisClient, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${Math.round(ms / 1000)} s`)), ms);
      }),
    ]);
  } catch (err) {
    client.disconnect();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A second client on the same deployment for pub/sub: its subscriptions wait while it
 * connects and are renewed on reconnect, and no command timeout cuts a long subscription.
 * (Cluster's duplicate() takes the start-up nodes first, then the options.)
 */
export function duplicateForSubscriber(client: RedisClient): RedisClient {
  const override = { enableOfflineQueue: true, lazyConnect: false, enableAutoPipelining: false };
  if (client instanceof Cluster) {
    return client.duplicate(undefined, { ...override, redisOptions: { ...client.options.redisOptions, commandTimeout: undefined } });
  }
  return client.duplicate({ ...override, commandTimeout: undefined });
}

/**
 * The connections a start-up check must look at: the one server, the primary the sentinels
 * named, or every master of the cluster (the node connections ioredis keeps).
 */
export async function primaries(client: RedisClient): Promise<Redis[]> {
  if (!(client instanceof Cluster)) return [client];
  return client.nodes('master');
}
