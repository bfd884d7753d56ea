import { EventEmitter } from 'node:events';
import { Auth } from './auth/auth.js';
import type { Config } from './config.js';
import { systemClock, type Clock } from './core/clock.js';
import { createLogger, type Logger } from './log.js';
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
  /** Run on shutdown, last registered first. */
  closers: Array<() => Promise<void> | void>;
  /** Set when a serving process starts to stop: /healthz answers 503 `draining` from then on. */
  draining?: boolean;
}

export interface ServiceOverrides {
  clock?: Clock;
  log?: Logger;
  store?: Store;
  fetcher?: Fetcher;
}

/** Opens the store and builds the services for one process. */
export async function createServices(config: Config, overrides: ServiceOverrides = {}): Promise<Services> {
  const log = overrides.log ?? createLogger(config.logLevel);
  const clock = overrides.clock ?? systemClock;
  const store = overrides.store ?? (await openStore(config, { log, clock }));
  const fetcher = overrides.fetcher ?? createFetcher(config);
  const auth = new Auth({ config, clock, log, store });
  const services: Services = { config, clock, log, store, fetcher, auth, events: new EventEmitter(), closers: [] };
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
