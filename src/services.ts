import path from 'node:path';
import { EventEmitter } from 'node:events';
import { Auth } from './auth/auth.js';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, NO_METRICS, type Metrics } from './metrics.js';
import { meteredFetcher, meteredStore } from './metrics-wrap.js';
import { startTelemetry, type Telemetry } from './telemetry.js';
import { createFetcher, type Fetcher } from './net/fetch.js';
import { ANALYTICS_COLLECTIONS, ANALYTICS_DIR, openStore, type Store } from './state/index.js';
import { moveCollection } from './state/transfer.js';
import { routedStore } from './state/routed.js';
import { AnalyticsThread } from './tools/shortener/analytics-thread.js';
import { LINK_DAYS } from './tools/shortener/analytics-counters.js';

export { systemClock, type Clock } from './core/clock.js';

/**
 * Named signals between the parts of one service, e.g. `cron-tasks:changed` from the tools to
 * the scheduler. Listeners must not throw.
 */
export type ServiceEvents = Pick<EventEmitter, 'on' | 'off' | 'emit'>;

/** Everything a handler may use beside its input. Built once per process. */
export interface Services {
  config: Config;
  clock: Clock;
  log: Logger;
  store: Store;
  fetcher: Fetcher;
  /** Keys, plans and limits. */
  auth: Auth;
  events: ServiceEvents;
  /** Counters and timings for GET /metrics; NO_METRICS (does nothing) unless METRICS_TOKEN or METRICS_PORT is set. */
  metrics: Metrics;
  /** Traces (OTEL_EXPORTER_OTLP_ENDPOINT); absent = no tracing, nothing loaded. */
  telemetry?: Telemetry | undefined;
  /** Run on shutdown, last registered first. */
  closers: Array<() => Promise<void> | void>;
  /** The analytics thread (ANALYTICS_THREAD=worker on the file store): counts the short links' visits; absent = counted in this thread. */
  analyticsThread?: AnalyticsThread;
  /** Set when a serving process starts to stop: /healthz answers 503 `draining` from then on. */
  draining?: boolean;
}

export interface ServiceOverrides {
  clock?: Clock;
  log?: Logger;
  store?: Store;
  /** The analytics thread whose store `store` routes to (openServiceStore). */
  analyticsThread?: AnalyticsThread | undefined;
  fetcher?: Fetcher;
  metrics?: Metrics;
}

/**
 * Opens the server's store: openStore's, and with ANALYTICS_THREAD=worker on the file store the
 * analytics thread with its own store routed in (docs/shortener.md, "The analytics thread").
 * Pass both to createServices (overrides) when the store is opened ahead of the services.
 */
export async function openServiceStore(config: Config, deps: { log: Logger; clock: Clock }): Promise<{ store: Store; analyticsThread?: AnalyticsThread }> {
  return withAnalyticsThread(await openStore(config, deps), config, deps.log);
}

/** openServiceStore's second half, on a store openStore opened: closes it when the thread does not start. */
export async function withAnalyticsThread(store: Store, config: Config, log: Logger): Promise<{ store: Store; analyticsThread?: AnalyticsThread }> {
  if (config.redis !== null || config.analyticsThread !== 'worker') return { store };
  const deps = { log };
  let analyticsThread: AnalyticsThread | undefined;
  try {
    analyticsThread = await AnalyticsThread.start({ dir: path.join(config.dataDir, ANALYTICS_DIR), log: deps.log, logLevel: config.logLevel });
    // Records of a version that counted in this thread only: moved there once, before anything is served.
    await moveCollection(store, analyticsThread.store, LINK_DAYS, deps.log);
  } catch (err) {
    await analyticsThread?.close();
    await store.close();
    throw err;
  }
  return { store: routedStore(store, analyticsThread.store, ANALYTICS_COLLECTIONS), analyticsThread };
}

/** Opens the store and builds the services for one process. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const log = overrides.log ?? createLogger(config.logLevel, config.logFormat);
  const clock = overrides.clock ?? systemClock;
  const metrics = overrides.metrics ?? (config.metricsToken !== null || config.metricsPort !== null ? createMetrics() : NO_METRICS);
  const opened = overrides.store === undefined ? await openServiceStore(config, { log, clock }) : { store: overrides.store, analyticsThread: overrides.analyticsThread };
  const rawStore = opened.store;
  const analyticsThread = opened.analyticsThread;
  const rawFetcher = overrides.fetcher ?? createFetcher(config);
  const telemetry = await startTelemetry(config);
  // Timed (and traced) only when someone can read the figures: no wrapper otherwise.
  const observed = metrics.enabled || telemetry !== undefined;
  const store = observed ? meteredStore(rawStore, metrics, telemetry) : rawStore;
  const fetcher = observed ? meteredFetcher(rawFetcher, metrics, telemetry) : rawFetcher;
  const auth = new Auth({ config, clock, log, store });
  const services: Services = { config, clock, log, store, fetcher, auth, events: new EventEmitter(), metrics, telemetry, closers: [] };
  if (analyticsThread) {
    services.analyticsThread = analyticsThread;
    analyticsThread.attach(services);
  }
  // Closers run last first: the spans of everything else's closing are exported too.
  if (telemetry) services.closers.push(() => telemetry.shutdown());
  services.closers.push(() => store.close());
  services.closers.push(() => fetcher.close());
  return services;
}

/** Runs the closers in reverse order; errors are logged, not thrown. */
export async function closeServices(services: Services): Promise<void> {
  for (const close of [...services.closers].reverse()) {
    try {
      await close();
    } catch (err) {
      services.log.error('error while closing', err);
    }
  }
  services.closers.length = 0;
}
