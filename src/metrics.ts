/**
 * The service's metrics (docs/operations.md, Metrics): one object behind `services.metrics`,
 * called at the few central places — the HTTP layer, the call path, the worker pool, the
 * fetcher, the store, webhook deliveries, tasks — and scraped at `GET /metrics`.
 *
 * Collected only when they can be read (METRICS_TOKEN or METRICS_PORT is set); otherwise
 * `NO_METRICS`, whose methods do nothing, so an unscraped server pays nothing. Every label value
 * comes from a bounded set (route templates, tool names, error codes, a fixed method list):
 * no raw path, key or input ever becomes a label.
 */
import client from 'prom-client';
import { TimedFamily, type Cell } from './metrics-series.js';

/** What a counted fetch ended with: the status class (`2xx` …) or the error code. */
export type FetchOutcome = string;

/** The worker pool's figures read at scrape time. */
export interface PoolGauges {
  readonly size: number;
  readonly busy: number;
  readonly queued: number;
}

/** Counts kept in memory before their store write (clicks, visit analytics), read at scrape time. */
export interface UnwrittenGauges {
  /** Entries (codes, link-days) not written yet. */
  readonly entries: number;
  /** Age of the oldest count not written yet, in seconds (0: none). */
  readonly oldestSeconds: number;
}

export interface Metrics {
  /** False for NO_METRICS: callers may skip their own timing. */
  readonly enabled: boolean;
  /** One HTTP request: its method, route template (never the raw path), status and duration. */
  http(method: string, route: string, status: number, seconds: number): void;
  /** One tool call on a face (`rest`, `mcp`, `memory`) and MCP era (`none` over REST); code `ok` or the error code. */
  toolCall(tool: string, face: string, era: string, code: string, seconds: number): void;
  /** A call refused by the rate limits, by the caller's plan (`keyless`, `free`, `pro`). */
  rateLimited(plan: string): void;
  /** A fetch starts; the returned function ends it with its outcome. */
  fetchStarted(): (outcome: FetchOutcome) => void;
  /** A webhook attempt's outcome (`ok`, `retry`, `gave_up`). */
  delivery(outcome: string): void;
  /** How late a webhook attempt started after its due time. */
  schedulerLag(seconds: number): void;
  /** One store operation on a backend (`file`, `redis`, `memory`): outcome `ok` or the StoreError code. */
  storeOp(backend: string, op: string, outcome: string, seconds: number): void;
  /** A task entered a state (`working`, `completed`, `failed`, `cancelled`). */
  task(state: string): void;
  /** A worker-pool job ended (`ok` or the error code). */
  poolJob(outcome: string): void;
  /** Reads the pool's queue and busy workers at each scrape. */
  watchPool(read: () => PoolGauges): void;
  /** Reads a kind (`analytics`: the short links' link-days) of counts not written yet at each scrape. */
  watchUnwritten(kind: string, read: () => UnwrittenGauges): void;
  /** A sweep's roll-up of the short links' clicks: `ok` with how many days it is behind the newest day due, or `failed`. */
  clicksRollUp(outcome: 'ok' | 'failed', behindDays?: number): void;
  /** The exposition: OpenMetrics when `accept` asks for it, else the Prometheus text format. */
  render(accept: string | undefined): Promise<{ contentType: string; body: string }>;
}

const nothing = (): void => {};

/** Metrics that count nothing: the default, so an unscraped server pays nothing. */
export const NO_METRICS: Metrics = {
  enabled: false,
  http: nothing,
  toolCall: nothing,
  rateLimited: nothing,
  fetchStarted: () => nothing,
  delivery: nothing,
  schedulerLag: nothing,
  storeOp: nothing,
  task: nothing,
  poolJob: nothing,
  watchPool: nothing,
  watchUnwritten: nothing,
  clicksRollUp: nothing,
  render: () => Promise.resolve({ contentType: 'text/plain; charset=utf-8', body: '' }),
};

/** Methods kept as labels; any other (attacker-chosen) method name is counted as `OTHER`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Latency buckets (s): a small call takes ~0.1 ms, a fetch or a heavy job seconds. */
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Whether an Accept header asks for OpenMetrics. */
export function wantsOpenMetrics(accept: string | undefined): boolean {
  return accept !== undefined && accept.toLowerCase().includes('application/openmetrics-text');
}

/** Real metrics on a private prom-client registry (several services in one test process do not clash). */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new client.Registry<client.RegistryContentType>();
  const registers = [registry];
  if (opts.defaultMetrics ?? true) client.collectDefaultMetrics({ register: registry });

  const http = new TimedFamily(
    registry,
    { name: 'http_requests_total', help: 'HTTP requests by method, route template and status' },
    { name: 'http_request_duration_seconds', help: 'Time to the response head, by method, route template and status' },
    ['method', 'route', 'status'],
    FAST_BUCKETS,
  );
  const calls = new TimedFamily(
    registry,
    { name: 'tool_calls_total', help: 'Tool calls by tool, face (rest|mcp|memory) and MCP era' },
    { name: 'tool_call_duration_seconds', help: 'Tool call duration, admission to result' },
    ['tool', 'face', 'era'],
    FAST_BUCKETS,
  );
  const errors = new client.Counter({ name: 'tool_errors_total', help: 'Failed tool calls by error code', labelNames: ['tool', 'face', 'era', 'code'], registers });
  const refusals = new client.Counter({ name: 'rate_limit_refusals_total', help: 'Calls refused by the rate limits (429), by plan', labelNames: ['plan'], registers });
  const inFlight = new client.Gauge({ name: 'fetches_in_flight', help: 'Outbound fetches running now', registers });
  const fetches = new client.Counter({ name: 'fetches_total', help: 'Outbound fetches by outcome (status class or error code)', labelNames: ['outcome'], registers });
  const deliveries = new client.Counter({ name: 'webhook_deliveries_total', help: 'Webhook attempts by outcome (ok, retry, gave_up)', labelNames: ['outcome'], registers });
  const lag = new client.Histogram({ name: 'scheduler_lag_seconds', help: 'How late a webhook attempt started after its due time', buckets: [0.01, 0.1, 0.5, 1, 5, 15, 60, 300, 900], registers });
  const storeSeconds = new client.Histogram({ name: 'store_operation_duration_seconds', help: 'Store operations by backend, operation and outcome', labelNames: ['backend', 'op', 'outcome'], buckets: FAST_BUCKETS, registers });
  const unavailable = new client.Counter({ name: 'storage_unavailable_total', help: 'Store operations that failed because the storage was unavailable', labelNames: ['backend'], registers });
  const tasks = new client.Counter({ name: 'mcp_tasks_total', help: 'Tasks (MCP Tasks, REST respond-async) entering each state', labelNames: ['state'], registers });
  const poolJobs = new client.Counter({ name: 'worker_pool_jobs_total', help: 'Worker-pool jobs by outcome', labelNames: ['outcome'], registers });
  const pools: Array<() => PoolGauges> = [];
  const poolGauge = (name: string, help: string, pick: (g: PoolGauges) => number) =>
    new client.Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(pools.reduce((n, read) => n + pick(read()), 0));
      },
    });
  poolGauge('worker_pool_queue_length', 'Heavy calls waiting for a worker', (g) => g.queued);
  poolGauge('worker_pool_busy_workers', 'Workers running a job', (g) => g.busy);
  poolGauge('worker_pool_size', 'Worker threads', (g) => g.size);
  // Kinds are the code's own names, never input: the label set stays fixed.
  const unwritten = new Map<string, () => UnwrittenGauges>();
  const unwrittenGauge = (name: string, help: string, pick: (g: UnwrittenGauges) => number) =>
    new client.Gauge({
      name,
      help,
      labelNames: ['kind'],
      registers,
      collect() {
        for (const [kind, read] of unwritten) this.set({ kind }, pick(read()));
      },
    });
  unwrittenGauge('unwritten_counts', 'Counts kept in memory for their next store write: link-days (analytics, the clicks among them)', (g) => g.entries);
  unwrittenGauge('unwritten_counts_oldest_seconds', 'Age of the oldest count not yet on disk (what a crash would lose), or of one the store refused; with the analytics thread\'s visit log (file store) a count is on disk once logged', (g) => g.oldestSeconds);

  const rollUpBehind = new client.Gauge({ name: 'link_clicks_rollup_behind_days', help: "Days the short links' clicks roll-up is behind the newest day due (0: up to date), as of this instance's last sweep", registers });
  const rollUpFailures = new client.Counter({ name: 'link_clicks_rollup_failures_total', help: "Sweeps whose roll-up of the short links' clicks failed", registers });

  // The HTTP cells by route, then method, then status as an array index: a request hashes its
  // route and method once each and builds no string (a status label is made with its cell).
  const httpRows = new Map<string, Map<string, Cell[]>>();
  let chain: Promise<unknown> = Promise.resolve();

  return {
    enabled: true,
    http(method, route, status, seconds) {
      // Known methods only, before any map grows: a method name is the client's choice.
      const m = METHODS.has(method) ? method : 'OTHER';
      let byMethod = httpRows.get(route);
      if (!byMethod) httpRows.set(route, (byMethod = new Map()));
      let row = byMethod.get(m);
      if (!row) byMethod.set(m, (row = []));
      (row[status] ??= http.cell(m, route, String(status))).observe(seconds);
    },
    toolCall(tool, face, era, code, seconds) {
      calls.cell(tool, face, era).observe(seconds);
      if (code !== 'ok') errors.labels(tool, face, era, code).inc();
    },
    rateLimited: (plan) => refusals.labels(plan).inc(),
    fetchStarted() {
      inFlight.inc();
      let ended = false;
      return (outcome) => {
        if (ended) return;
        ended = true;
        inFlight.dec();
        fetches.labels(outcome).inc();
      };
    },
    delivery: (outcome) => deliveries.labels(outcome).inc(),
    schedulerLag: (seconds) => lag.observe(Math.max(0, seconds)),
    storeOp(backend, op, outcome, seconds) {
      storeSeconds.labels(backend, op, outcome).observe(seconds);
      if (outcome === 'UNAVAILABLE' || outcome === 'WRITE_FAILED') unavailable.labels(backend).inc();
    },
    task: (state) => tasks.labels(state).inc(),
    poolJob: (outcome) => poolJobs.labels(outcome).inc(),
    watchPool: (read) => void pools.push(read),
    watchUnwritten: (kind, read) => void unwritten.set(kind, read),
    clicksRollUp(outcome, behindDays) {
      if (outcome === 'failed') rollUpFailures.inc();
      else rollUpBehind.set(behindDays ?? 0);
    },
    render(accept) {
      const open = wantsOpenMetrics(accept);
      // Scrapes take turns: an OpenMetrics one switches the registry's format for its duration.
      const next = chain.then(() => (open ? openMetricsText(registry) : registry.metrics().then((body) => ({ contentType: registry.contentType, body }))));
      chain = next.catch(() => {});
      return next;
    },
  };
}

/**
 * The registry in the OpenMetrics format, once. prom-client renames counters for it
 * (`http_requests_total` → `http_requests`) on the metric objects themselves; the names and the
 * Prometheus format are restored afterwards, so the next plain scrape reads as before.
 */
async function openMetricsText(registry: client.Registry<client.RegistryContentType>): Promise<{ contentType: string; body: string }> {
  const metrics = registry.getMetricsAsArray() as unknown as Array<{ name: string }>;
  const names = metrics.map((m) => m.name);
  registry.setContentType(client.Registry.OPENMETRICS_CONTENT_TYPE);
  try {
    return { contentType: registry.contentType, body: await registry.metrics() };
  } finally {
    metrics.forEach((m, i) => (m.name = names[i]!));
    registry.setContentType(client.Registry.PROMETHEUS_CONTENT_TYPE);
  }
}
