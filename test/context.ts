import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '../src/config.js';
import type { Caller, ToolContext } from '../src/registry.js';
import { createServices, type ServiceOverrides, type Services } from '../src/services.js';
import { createLogger } from '../src/log.js';

/** A fresh temp directory, removed by the caller (or left in /tmp on failure). */
export function tempDir(prefix = 'dtb-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Config for tests: a temp DATA_DIR, private fetches allowed, limits off, quiet logs, heavy
 * tools inline (WORKERS=0; the tests of the worker pool and of hostile load turn it on).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: tempDir(),
    FETCH_ALLOW_PRIVATE: 'true',
    WORKERS: '0',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://short.test',
    ...env,
  });
}

/** Real services on a temp data dir. Close them with closeServices(). */
export async function testServices(env: Record<string, string> = {}, overrides: ServiceOverrides = {}): Promise<Services> {
  const config = testConfig(env);
  return createServices(config, { log: createLogger(config.logLevel), ...overrides });
}

/** A ToolContext for calling handlers or invokeTool() directly. */
export function toolContext(services: Services, caller: Partial<Caller> = {}, progress: ToolContext['progress'] = async () => {}): ToolContext {
  return {
    services,
    caller: { keyId: null, ip: '127.0.0.1', transport: 'memory', ...caller },
    progress,
    signal: new AbortController().signal,
  };
}
