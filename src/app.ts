import type { Hono } from 'hono';
import type { Config } from './config.js';
import { CallPath } from './core/call.js';
import { poolFor, poolRunner } from './core/pool/runner.js';
import type { ToolPool } from './core/pool/pool.js';
import { storedCollections, type Family } from './core/family.js';
import { TaskManager } from './core/tasks/index.js';
import { createApp } from './http/app.js';
import type { Registry } from './registry.js';
import { closeServices, createServices, type ServiceOverrides, type Services } from './services.js';
import { createRegistry, families as allFamilies } from './tools/index.js';

/** The transport-neutral core of one process: the registry, its services and the call path. */
export interface Core {
  registry: Registry<Family>;
  families: readonly Family[];
  services: Services;
  calls: CallPath;
  /** The worker threads of CPU-heavy tools (absent with WORKERS=0). */
  pool: ToolPool | undefined;
  /** Tasks: slow calls answered now, fetched later (MCP Tasks extension, REST `Prefer: respond-async`). */
  tasks: TaskManager;
  /**
   * Settles once every family's collections are loaded (the store answers readiness meanwhile);
   * rejects when a data file is corrupt — the process should then say so and exit.
   */
  ready: Promise<void>;
  close(): Promise<void>;
}

/** One running HTTP service: the core plus the HTTP app (REST + /mcp + docs). */
export interface Service extends Core {
  app: Hono;
}

/** Builds the core for a config. Used by `stdio` and, through buildService, by everything else. */
export async function buildCore(config: Config, overrides: ServiceOverrides = {}, families: readonly Family[] = allFamilies): Promise<Core> {
  const registry = createRegistry(families);
  // A store opened here starts the families' threads with it (a store given comes with its own).
  const services = await createServices(config, overrides.store === undefined ? { ...overrides, starters: overrides.starters ?? families } : overrides);
  // Tasks are core, not a family: their collections load with the families' ones.
  const ready = services.store.preload(storedCollections(families));
  ready.catch(() => {}); // observed by the caller; never an unhandled rejection here
  // The pool's workers start once the collections are loaded (or at the first heavy call).
  const pool = poolFor(config, services.log, ready);
  if (pool) services.closers.push(() => pool.close());
  const calls = new CallPath(services, pool && poolRunner(pool, services.metrics, services.telemetry));
  const tasks = new TaskManager(services, calls, { ttlMs: config.taskTtlMs, leaseMs: config.taskLeaseMs });
  services.closers.push(() => tasks.close());
  return { registry, families, services, calls, pool, tasks, ready, close: () => closeServices(services) };
}

/** Builds the whole HTTP service for a config. Used by `serve`, the tests and the benchmarks. */
export async function buildService(config: Config, overrides: ServiceOverrides = {}, families: readonly Family[] = allFamilies): Promise<Service> {
  const core = await buildCore(config, overrides, families);
  return { ...core, app: createApp(core) };
}

/**
 * Starts the families' background services (serve mode only); they stop with the services, or
 * earlier through the function returned (a draining server stops claiming work first).
 */
export function startBackground(core: Core): () => Promise<void> {
  const stops: Array<() => Promise<void> | void> = [];
  for (const f of core.families) {
    const bg = f.background?.(core.services);
    if (bg) stops.push(() => bg.stop());
  }
  core.services.closers.push(...stops);
  return async () => {
    await Promise.allSettled(stops.map((stop) => stop()));
  };
}
