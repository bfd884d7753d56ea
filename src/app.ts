import type { Hono } from 'hono';
import type { Config } from './config.js';
import { createApp, type AppOptions } from './http-projection.js';
import type { CallGuard } from './mcp-server.js';
import type { Registry } from './registry.js';
import { closeServices, createServices, type ServiceOverrides, type Services } from './services.js';
import { createRegistry } from './tools/index.js';
import { shortLinkRoutes } from './tools/shortener/routes.js';
import { docsRoutes } from './docs/routes.js';
import { authFor } from './auth/auth.js';
import { authRoutes } from './auth/routes.js';

/** One running service: the registry, its services and the HTTP app (REST + /mcp). */
export interface Service {
  registry: Registry;
  services: Services;
  app: Hono;
  /** The limits guard shared by REST and MCP over HTTP (undefined when limits are off). */
  guard?: CallGuard;
  close(): Promise<void>;
}

/** The pieces every face shares, wired in one place. */
export function appOptions(registry: Registry, services: Services): AppOptions {
  const auth = authFor(services);
  return {
    registry,
    services,
    extraRoutes: [shortLinkRoutes(services), docsRoutes(registry, services.config), authRoutes(services)],
    resolveCaller: (c, base, bodyKey) => auth.resolveCaller(c, base, bodyKey),
    guard: services.config.rateLimits ? auth.guard : undefined,
  };
}

/** Builds the whole service for a config. Used by `serve`, the tests and the benchmarks. */
export async function buildService(config: Config, overrides: ServiceOverrides = {}): Promise<Service> {
  const registry = createRegistry();
  const services = await createServices(config, overrides);
  const opts = appOptions(registry, services);
  const app = createApp(opts);
  return { registry, services, app, guard: opts.guard, close: () => closeServices(services) };
}
