/**
 * Which Redis deployment the process talks to: one server (REDIS_URL), a Sentinel-watched
 * primary with replicas (REDIS_SENTINELS + REDIS_SENTINEL_NAME) or a Redis Cluster
 * (REDIS_CLUSTER_NODES). Plain data, read by src/config.ts without loading ioredis; the
 * clients are made in ./clients.ts. docs/scale-out.md describes each deployment.
 */

/** host:port of a sentinel or cluster node. */
export interface HostPort {
  host: string;
  port: number;
}

/** Credentials of the data nodes (the primary and replicas, or the cluster's nodes). */
export interface RedisAuth {
  username?: string;
  password?: string;
}

/**
 * TLS to every connection of the deployment (REDIS_TLS, rediss://): the PEM texts read at
 * start-up (src/config.ts), so a missing file fails there and not on the first reconnect.
 * Without `ca` the system's roots verify the server; the certificate's name is always checked.
 */
export interface RedisTls {
  /** REDIS_TLS_CA_FILE: the authorities that sign the servers' certificates. */
  ca?: string;
  /** REDIS_TLS_CERT_FILE + REDIS_TLS_KEY_FILE: a client certificate (mutual TLS). */
  cert?: string;
  key?: string;
  /** REDIS_TLS_SERVERNAME: the name every server's certificate must carry (and SNI). */
  servername?: string;
}

/**
 * `tls` set = every connection to a data node (the one server, the primary and replicas, the
 * cluster nodes, pub/sub) uses TLS; `sentinelTls` set = the connections to the sentinels do
 * (REDIS_TLS sets both; REDIS_SENTINEL_TLS makes them differ).
 */
export type RedisTopology =
  | { kind: 'single'; url: string; tls?: RedisTls }
  | ({ kind: 'sentinel'; sentinels: HostPort[]; name: string; sentinelPassword?: string; tls?: RedisTls; sentinelTls?: RedisTls } & RedisAuth)
  | ({ kind: 'cluster'; nodes: HostPort[]; tls?: RedisTls } & RedisAuth);

/** Parses `host:port,host:port` (IPv6 as `[::1]:port`); returns a message instead of throwing. */
export function parseHostList(raw: string): HostPort[] | string {
  const out: HostPort[] = [];
  for (const part of raw.split(',').map((s) => s.trim()).filter(Boolean)) {
    const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(part);
    const port = Number(m?.[3]);
    if (!m || port < 1 || port > 65535) return `"${part}" is not host:port (e.g. 10.0.0.5:26379 or [::1]:26379)`;
    out.push({ host: (m[1] ?? m[2])!, port });
  }
  if (out.length === 0) return 'no host:port given';
  return out;
}

/** Where the process connects, for messages (never a password). */
export function describeTopology(t: RedisTopology): string {
  if (t.kind === 'single') return redactedUrl(t.url);
  const list = (t.kind === 'sentinel' ? t.sentinels : t.nodes).map((n) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`)).join(',');
  if (t.kind === 'cluster') return `cluster ${list}${t.tls ? ' over TLS' : ''}`;
  const tls = t.tls && t.sentinelTls ? ' over TLS' : t.tls ? ' (primary over TLS, sentinels plain)' : t.sentinelTls ? ' (sentinels over TLS, primary plain)' : '';
  return `primary "${t.name}" via sentinels ${list}${tls}`;
}

/** The variable a user fixes when the connection fails. */
export function topologyVariable(t: RedisTopology): string {
  return t.kind === 'single' ? 'REDIS_URL' : t.kind === 'sentinel' ? 'REDIS_SENTINELS' : 'REDIS_CLUSTER_NODES';
}

/** The URL without its password, for messages. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'REDIS_URL';
  }
}

