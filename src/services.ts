import type { Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { openStore, type Store } from './state/index.js';
import { createFetcher, type Fetcher } from './net/fetch.js';

/** The clock every stateful piece reads, so tests can inject time. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Everything a handler may use beside its input. Built once per process. */
export interface Services {
  config: Config;
  clock: Clock;
  log: Logger;
  store: Store;
  fetcher: Fetcher;
  /** Run on shutdown, last registered first. */
  closers: Array<() => Promise<void> | void>;
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
  const services: Services = { config, clock, log, store, fetcher, closers: [] };
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
