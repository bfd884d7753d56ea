import os from 'node:os';
import path from 'node:path';
import { DEFAULT_PLANS, formatPlan, parsePlan, type PlanLimits, type PlanTable } from './auth/plans.js';
import { readRedisTls } from './state/redis/tls.js';
import { parseHostList, type RedisTopology } from './state/redis/topology.js';

/** The service configuration (docs/contract.md §4), read from the environment once at start-up. */
export interface Config {
  port: number;
  host: string;
  /** null = no cross-origin browser calls; '*' = any origin. */
  allowedOrigins: string[] | '*';
  publicBaseUrl: string;
  dataDir: string;
  rateLimits: boolean;
  fetchAllowPrivate: boolean;
  fetchTimeoutMs: number;
  fetchMaxBytes: number;
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent';
  /** LOG_FORMAT: `text` lines (the default) or one JSON object per line. */
  logFormat: 'text' | 'json';
  /** LOG_REQUESTS=on: one access line per request at info. */
  logRequests: boolean;
  /** Request body limit for tool calls (bytes). */
  bodyLimit: number;
  /** Request body limit for /api/file-process (bytes). */
  largeBodyLimit: number;
  /** Trust X-Forwarded-For from these proxy addresses (comma list); empty = never. */
  trustedProxies: string[];
  /** Worker threads for CPU-heavy tools; 0 runs them on the main thread (tests, debugging). */
  workers: number;
  /** Heavy calls that may wait for a worker; one more is refused at once (429). */
  workerQueue: number;
  /** Longest one heavy call may compute (ms); past it the worker is terminated (422). */
  workerDeadlineMs: number;
  /** V8 heap cap of each worker (MB); a call that needs more fails alone (422). */
  workerHeapMb: number;
  /** Open client connections at most; more are refused at accept. */
  maxConnections: number;
  /** Limits per plan (per minute, per UTC day, short links per UTC day). */
  plans: PlanTable;
  /** Bearer token of the admin routes; null = the admin routes do not exist (404). */
  adminToken: string | null;
  /** How long a task and its result are kept from creation (ms). */
  taskTtlMs: number;
  /** A working task whose instance has not renewed it for this long reads failed (ms). */
  taskLeaseMs: number;
  /** How long a stopping server waits for the calls in flight before cutting them (ms). */
  shutdownTimeoutMs: number;
  /**
   * ANALYTICS_THREAD: `worker` (the default) counts the short links' visits in a thread of its
   * own, which writes them (on the file store to a store of its own in DATA_DIR/analytics; on
   * Redis over connections of its own); `main` counts them in the main thread.
   */
  analyticsThread: 'main' | 'worker';
  /**
   * ANALYTICS_BATCH_MS: on the file store, how often the analytics thread writes the link-day
   * records; every visit is in its visit log (fsynced every 250 ms) meanwhile.
   */
  analyticsBatchMs: number;
  /** LINK_CACHE_MAX: short links each instance keeps for its redirects (≈ 200 bytes each); 0 = none. */
  linkCacheMax: number;
  /** REDIS_URL: all state in one Redis (N instances); null with Sentinel, Cluster or the embedded file store. */
  redisUrl: string | null;
  /** The Redis deployment (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES); null = the embedded file store in dataDir. */
  redis: RedisTopology | null;
  /** REDIS_WAIT_REPLICAS: replicas that must hold a critical write (key, link, cron task, sign-in grant) before it is acknowledged; 0 = none. */
  redisWaitReplicas: number;
  /** REDIS_WAIT_TIMEOUT_MS: the longest wait for them (then 503). */
  redisWaitTimeoutMs: number;
  /** Prefix of every Redis key (REDIS_PREFIX). */
  redisPrefix: string;
  /** REDIS_ALLOW_EVICTION: start even when Redis may evict keys (maxmemory-policy ≠ noeviction). */
  redisAllowEviction: boolean;
  /** STDIO_API_KEY: the API key a stdio launch acts as (its links and tasks are the key's); null = keyless. */
  stdioApiKey: string | null;
  /** TOOLSETS: the families MCP lists when a client chooses none (checked against the registry at start-up); null = all. */
  toolsets: string[] | null;
  /** METRICS_TOKEN: bearer token of `GET /metrics`; null = no token asked (METRICS_PORT alone) or no metrics. */
  metricsToken: string | null;
  /** METRICS_PORT: a second listener serving only `/metrics` (same HOST); null = none. */
  metricsPort: number | null;
  /** OTEL_EXPORTER_OTLP_ENDPOINT: traces exported over OTLP/HTTP to `<endpoint>/v1/traces`; null = no tracing (nothing loaded). */
  otelEndpoint: string | null;
  /** MCP_AUTH: `required` answers a tokenless /mcp 401 with the sign-in metadata, as /mcp/auth always does. */
  mcpAuth: 'optional' | 'required';
}

/** Two heavy workers on a small machine, at most four: the main thread keeps a core's share. */
const DEFAULT_WORKERS = Math.max(1, Math.min(4, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length));

export interface ConfigVar {
  name: string;
  default: string;
  description: string;
}

/** Every variable with its default and meaning; `devtoolbox --help` and the README print it. */
export const CONFIG_VARS: ConfigVar[] = [
  { name: 'PORT', default: '3000', description: 'TCP port of the HTTP server' },
  { name: 'HOST', default: '127.0.0.1', description: 'Address to bind (0.0.0.0 to listen on all interfaces)' },
  { name: 'ALLOWED_ORIGINS', default: '', description: 'Comma list of browser origins allowed to call the API, or * for any; empty = same-origin and non-browser calls only' },
  { name: 'PUBLIC_BASE_URL', default: 'http://localhost:$PORT', description: 'Base URL used in short links; also the sign-in (OAuth) issuer and the resource <base>/mcp, so it must be the address clients reach' },
  { name: 'DATA_DIR', default: './data', description: 'Directory of the JSON data files (one process per directory); unused with REDIS_URL' },
  { name: 'REDIS_URL', default: '', description: 'redis://, rediss:// or unix:///path.sock: keep all state in Redis (several instances share it; no DATA_DIR); unset = the embedded file store' },
  { name: 'REDIS_SENTINELS', default: '', description: 'Comma list of Redis Sentinel host:port: keep all state on the primary they name (REDIS_SENTINEL_NAME), following it through failovers; instead of REDIS_URL' },
  { name: 'REDIS_SENTINEL_NAME', default: '', description: 'The primary\'s name in the sentinels\' configuration (sentinel monitor <name> …); required with REDIS_SENTINELS' },
  { name: 'REDIS_SENTINEL_PASSWORD', default: '', description: 'Password of the sentinels themselves (requirepass in sentinel.conf), when they ask for one' },
  { name: 'REDIS_CLUSTER_NODES', default: '', description: 'Comma list of Redis Cluster host:port (a few are enough; the rest are discovered): keep all state in the cluster; instead of REDIS_URL' },
  { name: 'REDIS_PASSWORD', default: '', description: 'Password of the data nodes with REDIS_SENTINELS or REDIS_CLUSTER_NODES (REDIS_URL carries its own: redis://:password@host)' },
  { name: 'REDIS_TLS', default: 'off', description: 'on: TLS to the sentinels and data nodes (REDIS_SENTINELS) or to every cluster node (REDIS_CLUSTER_NODES); with REDIS_URL write rediss:// instead' },
  { name: 'REDIS_SENTINEL_TLS', default: '', description: 'on|off: whether the sentinels (REDIS_SENTINELS) speak TLS, when not as the data nodes (e.g. plain sentinels on a private network in front of TLS data nodes: REDIS_TLS=on, REDIS_SENTINEL_TLS=off); unset = as REDIS_TLS' },
  { name: 'REDIS_TLS_CA_FILE', default: '', description: 'PEM file of the CA that signs the Redis servers\' certificates (with TLS); unset = the system\'s trusted roots' },
  { name: 'REDIS_TLS_CERT_FILE', default: '', description: 'PEM client certificate for Redis servers that require one (tls-auth-clients yes); with REDIS_TLS_KEY_FILE' },
  { name: 'REDIS_TLS_KEY_FILE', default: '', description: 'PEM private key of REDIS_TLS_CERT_FILE' },
  { name: 'REDIS_TLS_SERVERNAME', default: '', description: 'The name every Redis server\'s certificate must carry (and SNI), e.g. when sentinels or the cluster announce nodes by IP address; unset = the host dialled' },
  { name: 'REDIS_WAIT_REPLICAS', default: '0', description: 'With Redis replicas (Sentinel, Cluster): a key issued, a link or cron task created and a sign-in grant are acknowledged only once this many replicas hold them (WAIT); fewer within REDIS_WAIT_TIMEOUT_MS → 503' },
  { name: 'REDIS_WAIT_TIMEOUT_MS', default: '1000', description: 'The longest a critical write waits for REDIS_WAIT_REPLICAS replicas; on a Cluster also the longest a capped insert\'s lock waits for a replica of its master (then 503)' },
  { name: 'REDIS_PREFIX', default: 'devtoolbox:', description: 'Prefix of every Redis key, so deployments and tests can share one Redis' },
  { name: 'REDIS_ALLOW_EVICTION', default: 'false', description: 'true starts even when Redis maxmemory-policy is not noeviction (an evicting Redis silently loses keys and links)' },
  { name: 'RATE_LIMITS', default: 'on', description: 'on | off: per-key / per-IP request limits, short-link quota, registration limit, task-polling bound' },
  { name: 'FETCH_ALLOW_PRIVATE', default: 'false', description: 'true lets fetched URLs and webhooks reach loopback/private addresses (tests, local use)' },
  { name: 'FETCH_TIMEOUT_MS', default: '10000', description: 'Deadline for one fetched URL, body included' },
  { name: 'FETCH_MAX_BYTES', default: '20971520', description: 'Largest fetched body, counted after decompression (20 MiB)' },
  { name: 'BODY_LIMIT', default: '1048576', description: 'Largest request body for tool calls (1 MiB)' },
  { name: 'FILE_BODY_LIMIT', default: '10485760', description: 'Largest request body for /api/file-process (10 MiB)' },
  { name: 'TRUSTED_PROXIES', default: '', description: 'Comma list of proxy addresses whose X-Forwarded-For is believed' },
  { name: 'WORKERS', default: String(DEFAULT_WORKERS), description: 'Worker threads for CPU-heavy tools (json_yaml_convert, xml_format, sql_format, file_process); 0 = main thread' },
  { name: 'WORKER_QUEUE', default: '32', description: 'Heavy calls that may wait for a worker; more are refused with 429 and Retry-After' },
  { name: 'WORKER_DEADLINE_MS', default: '15000', description: 'Longest one heavy call may compute; past it its worker is terminated and the call answers 422' },
  { name: 'WORKER_HEAP_MB', default: '512', description: 'Heap cap of each worker; a heavy call that needs more answers 422, the server lives on' },
  { name: 'MAX_CONNECTIONS', default: '4096', description: 'Open client connections at most (silent sockets close after 120 s, slow headers after 15 s, a whole request after 60 s)' },
  { name: 'PLAN_KEYLESS', default: formatPlan(DEFAULT_PLANS.keyless), description: 'Keyless limits per client address: calls per minute / per UTC day / short links per UTC day' },
  { name: 'PLAN_FREE', default: formatPlan(DEFAULT_PLANS.free), description: 'Free-plan limits per key (same shape); must be at least the keyless ones' },
  { name: 'PLAN_PRO', default: formatPlan(DEFAULT_PLANS.pro), description: 'Pro-plan limits per key (same shape)' },
  { name: 'ADMIN_TOKEN', default: '', description: 'Enables the admin route (plan changes while the server runs, used by `devtoolbox keys set-plan`); at least 16 characters; unset = no admin route' },
  { name: 'TASK_TTL_MS', default: '3600000', description: 'How long a task (MCP Tasks, REST Prefer: respond-async) and its result are kept from creation' },
  { name: 'TASK_LEASE_MS', default: '30000', description: 'A working task whose instance stopped renewing it for this long reads failed (a crashed instance)' },
  { name: 'TOOLSETS', default: '', description: 'Comma list of toolsets (families) MCP lists by default; a client may choose others with ?toolsets= or X-MCP-Toolsets; unset = all' },
  { name: 'STDIO_API_KEY', default: '', description: 'stdio only: the API key (dtb_…) the launch acts as, so its short links are managed by that key (url_list, url_update, url_delete) and its cron tasks are the key\'s; no limits over stdio either way; an unknown key stops start-up' },
  { name: 'MCP_AUTH', default: 'optional', description: 'optional | required: required makes /mcp itself ask for sign-in (OAuth 2.1, as /mcp/auth always does) instead of serving keyless calls' },
  { name: 'SHUTDOWN_TIMEOUT_MS', default: '25000', description: 'On SIGTERM/SIGINT, how long calls in flight (SSE streams included) may take to finish before they are cut; keep it under the kill delay of the orchestrator (Kubernetes: 30 s)' },
  { name: 'ANALYTICS_THREAD', default: 'worker', description: "Where short links' visits are counted and written: worker (a thread of their own, started at the first visit; on the file store with a store of its own in DATA_DIR/analytics) or main" },
  { name: 'ANALYTICS_BATCH_MS', default: '10000', description: "File store, ANALYTICS_THREAD=worker: how often the short links' link-day records are written (or sooner, at 100,000 link-days waiting); meanwhile every visit is in a visit log in DATA_DIR/analytics, fsynced every 250 ms and replayed after a crash; 250-600000" },
  { name: 'LINK_CACHE_MAX', default: '250000', description: 'Short links each instance keeps in memory for its redirects (about 200 bytes each, oldest out first); 0 = every redirect reads the store' },
  { name: 'METRICS_TOKEN', default: '', description: 'Serves GET /metrics (Prometheus text; OpenMetrics on Accept) to callers sending Authorization: Bearer <token>; at least 16 characters; unset with METRICS_PORT unset = no metrics collected and /metrics is 404' },
  { name: 'METRICS_PORT', default: '', description: 'A second listener on HOST serving only GET /metrics (the token is still asked when METRICS_TOKEN is set); keep it off the public network' },
  { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', default: '', description: 'http(s) base URL of an OTLP/HTTP collector: traces (a span per request and tool call, child spans for fetches, store operations and worker-pool runs; W3C traceparent honoured) go to <endpoint>/v1/traces; unset = no tracing, nothing loaded' },
  { name: 'LOG_LEVEL', default: 'info', description: 'debug | info | warn | error | silent (logs go to stderr)' },
  { name: 'LOG_FORMAT', default: 'text', description: 'text | json: one JSON object per line (time, level, msg, request_id, route, status, duration_ms, tool, key_id prefix; keys redacted); json also puts the request id on every log line of the request' },
  { name: 'LOG_REQUESTS', default: 'off', description: 'on: one access line per request at info (method, route template, status, duration, request id); the X-Request-Id and the request_id of error bodies are there either way' },
];

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function int(env: Record<string, string | undefined>, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Record<string, string | undefined>, name: string, def: boolean, yes: string[], no: string[]): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return def;
  if (yes.includes(raw)) return true;
  if (no.includes(raw)) return false;
  throw new ConfigError(`${name} must be one of ${[...yes, ...no].join(', ')}, got "${env[name]}"`);
}

/** TOOLSETS as names; the names are checked where the families are known (MCP start-up). */
function toolsetsOf(raw: string | undefined): string[] | null {
  const names = (raw ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  return names.length > 0 ? names : null;
}

/** Parses and validates the environment; throws ConfigError with a clear message. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const host = (env.HOST ?? '').trim() || '127.0.0.1';
  const originsRaw = (env.ALLOWED_ORIGINS ?? '').trim();
  let allowedOrigins: Config['allowedOrigins'];
  if (originsRaw === '*') allowedOrigins = '*';
  else {
    allowedOrigins = originsRaw ? originsRaw.split(',').map((s) => s.trim()).filter(Boolean) : [];
    for (const o of allowedOrigins) {
      let u: URL;
      try {
        u = new URL(o);
      } catch {
        throw new ConfigError(`ALLOWED_ORIGINS: "${o}" is not an origin like https://example.com`);
      }
      if (u.origin !== o.replace(/\/$/, '')) throw new ConfigError(`ALLOWED_ORIGINS: "${o}" is not an origin like https://example.com`);
    }
    allowedOrigins = allowedOrigins.map((o) => o.replace(/\/$/, ''));
  }
  const baseRaw = (env.PUBLIC_BASE_URL ?? '').trim() || `http://localhost:${port}`;
  let publicBaseUrl: string;
  try {
    const u = new URL(baseRaw);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error();
    publicBaseUrl = baseRaw.replace(/\/+$/, '');
  } catch {
    throw new ConfigError(`PUBLIC_BASE_URL must be an http(s) URL, got "${baseRaw}"`);
  }
  const level = (env.LOG_LEVEL ?? 'info').trim().toLowerCase();
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(level)) {
    throw new ConfigError(`LOG_LEVEL must be debug, info, warn, error or silent, got "${env.LOG_LEVEL}"`);
  }
  return {
    port,
    host,
    allowedOrigins,
    publicBaseUrl,
    dataDir: path.resolve(env.DATA_DIR?.trim() || './data'),
    rateLimits: bool(env, 'RATE_LIMITS', true, ['on', 'true', '1'], ['off', 'false', '0']),
    fetchAllowPrivate: bool(env, 'FETCH_ALLOW_PRIVATE', false, ['true', '1', 'on'], ['false', '0', 'off']),
    fetchTimeoutMs: int(env, 'FETCH_TIMEOUT_MS', 10_000, 100, 600_000),
    fetchMaxBytes: int(env, 'FETCH_MAX_BYTES', 20 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    bodyLimit: int(env, 'BODY_LIMIT', 1024 * 1024, 1024, 256 * 1024 * 1024),
    largeBodyLimit: int(env, 'FILE_BODY_LIMIT', 10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    trustedProxies: (env.TRUSTED_PROXIES ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    logLevel: level as Config['logLevel'],
    logFormat: logFormat(env),
    logRequests: bool(env, 'LOG_REQUESTS', false, ['on', 'true', '1'], ['off', 'false', '0']),
    workers: int(env, 'WORKERS', DEFAULT_WORKERS, 0, 64),
    workerQueue: int(env, 'WORKER_QUEUE', 32, 0, 10_000),
    workerDeadlineMs: int(env, 'WORKER_DEADLINE_MS', 15_000, 100, 600_000),
    workerHeapMb: int(env, 'WORKER_HEAP_MB', 512, 32, 16_384),
    maxConnections: int(env, 'MAX_CONNECTIONS', 4096, 1, 1_000_000),
    plans: plans(env),
    adminToken: adminToken(env),
    redisUrl: redisUrl(env),
    redis: redisTopology(env),
    redisWaitReplicas: waitReplicas(env),
    redisWaitTimeoutMs: int(env, 'REDIS_WAIT_TIMEOUT_MS', 1000, 10, 60_000),
    redisPrefix: redisPrefix(env),
    redisAllowEviction: bool(env, 'REDIS_ALLOW_EVICTION', false, ['true', '1', 'on'], ['false', '0', 'off']),
    toolsets: toolsetsOf(env.TOOLSETS),
    stdioApiKey: stdioApiKey(env),
    taskTtlMs: int(env, 'TASK_TTL_MS', 3_600_000, 1000, 7 * 86_400_000),
    taskLeaseMs: int(env, 'TASK_LEASE_MS', 30_000, 300, 3_600_000),
    shutdownTimeoutMs: int(env, 'SHUTDOWN_TIMEOUT_MS', 25_000, 0, 3_600_000),
    analyticsThread: bool(env, 'ANALYTICS_THREAD', true, ['worker'], ['main']) ? 'worker' : 'main',
    analyticsBatchMs: int(env, 'ANALYTICS_BATCH_MS', 10_000, 250, 600_000),
    linkCacheMax: int(env, 'LINK_CACHE_MAX', 250_000, 0, 10_000_000),
    metricsToken: token(env, 'METRICS_TOKEN'),
    metricsPort: metricsPort(env, port),
    otelEndpoint: otelEndpoint(env),
    mcpAuth: bool(env, 'MCP_AUTH', false, ['required'], ['optional']) ? 'required' : 'optional',
  };
}

function otelEndpoint(env: Record<string, string | undefined>): string | null {
  const raw = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!raw) return null;
  try {
    const u = new URL(raw);
    if (u.protocol === 'http:' || u.protocol === 'https:') return raw;
  } catch {
    // reported below
  }
  throw new ConfigError(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got "${raw}"`);
}

function logFormat(env: Record<string, string | undefined>): Config['logFormat'] {
  const raw = (env.LOG_FORMAT ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'text') return 'text';
  if (raw === 'json') return 'json';
  throw new ConfigError(`LOG_FORMAT must be text or json, got "${env.LOG_FORMAT}"`);
}

/** `redis://`, `rediss://` or `unix:///path/to.sock`; null when unset. */
function redisUrl(env: Record<string, string | undefined>): string | null {
  const raw = env.REDIS_URL?.trim();
  if (!raw) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`REDIS_URL must be redis://host:port, rediss://host:port or unix:///path/to.sock, got "${raw}"`);
  }
  if (u.protocol === 'unix:') {
    if (!u.pathname || u.pathname === '/') throw new ConfigError(`REDIS_URL: unix:// needs a socket path, e.g. unix:///run/redis/redis.sock, got "${raw}"`);
  } else if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new ConfigError(`REDIS_URL must start with redis://, rediss:// or unix://, got "${raw}"`);
  } else if (!u.hostname) throw new ConfigError(`REDIS_URL has no host: "${raw}"`);
  return raw;
}

/** The deployment with its TLS settings (REDIS_TLS*, ./state/redis/tls.ts). */
function redisTopology(env: Record<string, string | undefined>): RedisTopology | null {
  const t = redisDeployment(env);
  const kind = t === null ? null : t.kind === 'single' ? 'url' : t.kind;
  const tls = readRedisTls(env, kind, t?.kind === 'single' && t.url.toLowerCase().startsWith('rediss:'));
  if (typeof tls === 'string') throw new ConfigError(tls);
  if (!t) return t;
  return { ...t, ...(tls.data ? { tls: tls.data } : {}), ...(t.kind === 'sentinel' && tls.sentinels ? { sentinelTls: tls.sentinels } : {}) };
}

/** Exactly one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER_NODES; null when none is set. */
function redisDeployment(env: Record<string, string | undefined>): RedisTopology | null {
  const url = redisUrl(env);
  const sentinels = env.REDIS_SENTINELS?.trim() ?? '';
  const nodes = env.REDIS_CLUSTER_NODES?.trim() ?? '';
  const set = [url ? 'REDIS_URL' : '', sentinels ? 'REDIS_SENTINELS' : '', nodes ? 'REDIS_CLUSTER_NODES' : ''].filter(Boolean);
  if (set.length > 1) throw new ConfigError(`set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_NODES (one Redis deployment), got ${set.join(' and ')}`);
  const name = env.REDIS_SENTINEL_NAME?.trim() ?? '';
  const sentinelPassword = env.REDIS_SENTINEL_PASSWORD ?? '';
  const password = env.REDIS_PASSWORD ?? '';
  if (!sentinels && (name || sentinelPassword)) throw new ConfigError(`${name ? 'REDIS_SENTINEL_NAME' : 'REDIS_SENTINEL_PASSWORD'} needs REDIS_SENTINELS (the sentinels' host:port list)`);
  if (url) {
    if (password) throw new ConfigError('REDIS_PASSWORD is for REDIS_SENTINELS and REDIS_CLUSTER_NODES; put the password in REDIS_URL (redis://:password@host:6379)');
    return { kind: 'single', url };
  }
  const auth = password ? { password } : {};
  if (sentinels) {
    const list = parseHostList(sentinels);
    if (typeof list === 'string') throw new ConfigError(`REDIS_SENTINELS: ${list}`);
    if (!name) throw new ConfigError('REDIS_SENTINEL_NAME is required with REDIS_SENTINELS: the name of the primary in the sentinels\' configuration (sentinel monitor <name> host port quorum)');
    if (name.length > 200 || /\s/.test(name)) throw new ConfigError(`REDIS_SENTINEL_NAME must be at most 200 characters without spaces, got "${name}"`);
    return { kind: 'sentinel', sentinels: list, name, ...(sentinelPassword ? { sentinelPassword } : {}), ...auth };
  }
  if (nodes) {
    const list = parseHostList(nodes);
    if (typeof list === 'string') throw new ConfigError(`REDIS_CLUSTER_NODES: ${list}`);
    return { kind: 'cluster', nodes: list, ...auth };
  }
  if (password) throw new ConfigError('REDIS_PASSWORD needs REDIS_SENTINELS or REDIS_CLUSTER_NODES');
  return null;
}

/** REDIS_WAIT_REPLICAS: only with a Redis deployment (the file store has no replicas). */
function waitReplicas(env: Record<string, string | undefined>): number {
  const n = int(env, 'REDIS_WAIT_REPLICAS', 0, 0, 16);
  if (n > 0 && !(env.REDIS_URL?.trim() || env.REDIS_SENTINELS?.trim() || env.REDIS_CLUSTER_NODES?.trim())) {
    throw new ConfigError('REDIS_WAIT_REPLICAS needs a Redis deployment (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES)');
  }
  return n;
}

function redisPrefix(env: Record<string, string | undefined>): string {
  const raw = env.REDIS_PREFIX;
  if (raw === undefined || raw === '') return 'devtoolbox:';
  if (raw.length > 100 || /[\s{}]/.test(raw)) throw new ConfigError(`REDIS_PREFIX must be at most 100 characters without spaces or braces, got "${raw}"`);
  return raw;
}

function plan(env: Record<string, string | undefined>, name: string, def: PlanLimits): PlanLimits {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return def;
  const p = parsePlan(raw);
  if (!p) throw new ConfigError(`${name} must be three whole numbers ≥ 1, per_minute/per_day/short_links_per_day (e.g. ${formatPlan(def)}), got "${raw}"`);
  return p;
}

function plans(env: Record<string, string | undefined>): PlanTable {
  const table: PlanTable = {
    keyless: plan(env, 'PLAN_KEYLESS', DEFAULT_PLANS.keyless),
    free: plan(env, 'PLAN_FREE', DEFAULT_PLANS.free),
    pro: plan(env, 'PLAN_PRO', DEFAULT_PLANS.pro),
  };
  for (const k of ['per_minute', 'per_day', 'short_links_per_day'] as const) {
    if (table.free[k] < table.keyless[k]) throw new ConfigError(`PLAN_FREE must not be below PLAN_KEYLESS (${k}): a key raises limits`);
  }
  return table;
}

/** The shape of an API key (auth/keys.ts KEY_PATTERN; kept here so the configuration loads nothing heavy). */
export const API_KEY_SHAPE = /^dtb_[A-Za-z0-9]{32}$/;

/** STDIO_API_KEY: the shape of a key (it is looked up when stdio starts); never echoed. */
function stdioApiKey(env: Record<string, string | undefined>): string | null {
  const raw = env.STDIO_API_KEY?.trim();
  if (!raw) return null;
  if (!API_KEY_SHAPE.test(raw)) throw new ConfigError('STDIO_API_KEY must be an API key: dtb_ and 32 letters or digits');
  return raw;
}

function adminToken(env: Record<string, string | undefined>): string | null {
  return token(env, 'ADMIN_TOKEN');
}

/** A bearer token variable: at least 16 characters without spaces; null when unset. */
function token(env: Record<string, string | undefined>, name: string): string | null {
  const raw = env[name];
  if (raw === undefined || raw === '') return null;
  if (raw.length < 16 || /\s/.test(raw)) throw new ConfigError(`${name} must be at least 16 characters without spaces`);
  return raw;
}

/** METRICS_PORT: a port other than PORT (0 = any free one); null when unset. */
function metricsPort(env: Record<string, string | undefined>, port: number): number | null {
  if ((env.METRICS_PORT ?? '').trim() === '') return null;
  const p = int(env, 'METRICS_PORT', 0, 0, 65535);
  if (p !== 0 && p === port) throw new ConfigError(`METRICS_PORT must differ from PORT (${port})`);
  return p;
}
