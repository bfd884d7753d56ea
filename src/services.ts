import { EventEmitter } from 'node:events';
import { Auth } from './auth/auth.js';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics, NO_METRICS, type Metrics } from './metrics.js';
import { meteredFetcher, meteredStore } from './metrics-wrap.js';
import { startTelemetry, type Telemetry } from './telemetry.js';
import { createFetcher, type Fetcher } from './net/fetch.js';
import { openStore, type Store } from './state/index.js';

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
  /** The families' own threads, by family (the shortener's analytics thread with ANALYTICS_THREAD=worker); absent = none. */
  threads?: Readonly<Record<string, FamilyThread>>;
  /** Set when a serving process starts to stop: /healthz answers 503 `draining` from then on. */
  draining?: boolean;
}

export interface ServiceOverrides {
  clock?: Clock;
  log?: Logger;
  store?: Store;
  /** The families' threads `store` routes to (withThreads), with it. */
  threads?: Readonly<Record<string, FamilyThread>>;
  /** Without `store`: the families whose threads start with the store opened here (buildCore passes its families). */
  starters?: readonly ThreadStarterOf[];
  fetcher?: Fetcher;
  metrics?: Metrics;
}

/**
 * A thread a family runs beside the main one, with a store of its own for some of its
 * collections (the shortener's analytics thread: docs/shortener.md, "The analytics thread").
 * Attached to the services once they exist; closed with them, before the store.
 */
export interface FamilyThread {
  attach(services: Services): void;
  close(): Promise<void>;
}

/**
 * Starts a family's thread on the server's store (FamilyManifest.startThread): resolves with
 * the store to use from then on (the thread's collections routed in) and the thread, or
 * undefined when this config runs none. Closes `store` when it fails.
 */
export type ThreadStarter = (store: Store, config: Config, log: Logger) => Promise<{ store: Store; thread: FamilyThread } | undefined>;
export interface ThreadStarterOf {
  name: string;
  startThread?: ThreadStarter | undefined;
}

/** Starts the families' threads on a store openStore opened (closed when one fails). */
export async function withThreads(store: Store, config: Config, log: Logger, families: readonly ThreadStarterOf[]): Promise<{ store: Store; threads: Record<string, FamilyThread> }> {
  const threads: Record<string, FamilyThread> = {};
  for (const f of families) {
    const started = await f.startThread?.(store, config, log);
    if (!started) continue;
    store = started.store;
    threads[f.name] = started.thread;
  }
  return { store, threads };
}

/** Opens the store and builds the services for one process. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const log = overrides.log ?? createLogger(config.logLevel, config.logFormat);
  const clock = overrides.clock ?? systemClock;
  const metrics = overrides.metrics ?? (config.metricsToken !== null || config.metricsPort !== null ? createMetrics() : NO_METRICS);
  const opened = overrides.store === undefined ? await withThreads(await openStore(config, { log, clock }), config, log, overrides.starters ?? []) : { store: overrides.store, threads: overrides.threads };
  const rawStore = opened.store;
  const rawFetcher = overrides.fetcher ?? createFetcher(config);
  const telemetry = await startTelemetry(config);
  // Timed (and traced) only when someone can read the figures: no wrapper otherwise.
  const observed = metrics.enabled || telemetry !== undefined;
  const store = observed ? meteredStore(rawStore, metrics, telemetry) : rawStore;
  const fetcher = observed ? meteredFetcher(rawFetcher, metrics, telemetry) : rawFetcher;
  const auth = new Auth({ config, clock, log, store });
  const services: Services = { config, clock, log, store, fetcher, auth, events: new EventEmitter(), metrics, telemetry, closers: [] };
  const threads = Object.values(opened.threads ?? {});
  if (threads.length > 0) services.threads = opened.threads;
  // Closers run last first: the spans of everything else's closing are exported too.
  if (telemetry) services.closers.push(() => telemetry.shutdown());
  services.closers.push(() => store.close());
  services.closers.push(() => fetcher.close());
  // Closed before the store (closers run last first): a thread writes what it counted into its store, then stops.
  for (const t of threads) {
    t.attach(services);
    services.closers.push(() => t.close());
  }
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
