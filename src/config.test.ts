import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.js';

describe('config', () => {
  it('has the contract defaults', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({
      port: 3000,
      host: '127.0.0.1',
      allowedOrigins: [],
      publicBaseUrl: 'http://localhost:3000',
      rateLimits: true,
      fetchAllowPrivate: false,
      fetchTimeoutMs: 10000,
      fetchMaxBytes: 20 * 1024 * 1024,
      bodyLimit: 1024 * 1024,
      largeBodyLimit: 10 * 1024 * 1024,
      logLevel: 'info',
      shutdownTimeoutMs: 25_000,
      analyticsThread: 'worker',
      analyticsBatchMs: 10_000,
    });
  });

  it('reads every variable', () => {
    const c = loadConfig({ PORT: '8080', ALLOWED_ORIGINS: 'https://a.example, https://b.example/', RATE_LIMITS: 'off', FETCH_ALLOW_PRIVATE: 'true', PUBLIC_BASE_URL: 'https://s.example/' });
    expect(c.port).toBe(8080);
    expect(c.allowedOrigins).toStrictEqual(['https://a.example', 'https://b.example']);
    expect(c.rateLimits).toBe(false);
    expect(c.fetchAllowPrivate).toBe(true);
    expect(c.publicBaseUrl).toBe('https://s.example');
    expect(loadConfig({ ALLOWED_ORIGINS: '*' }).allowedOrigins).toBe('*');
    expect(loadConfig({ SHUTDOWN_TIMEOUT_MS: '500' }).shutdownTimeoutMs).toBe(500);
    expect([loadConfig({ ANALYTICS_THREAD: 'main' }).analyticsThread, loadConfig({ ANALYTICS_THREAD: 'worker' }).analyticsThread]).toStrictEqual(['main', 'worker']);
  });

  it('refuses bad values with a clear message', () => {
    const bad: Array<[Record<string, string>, RegExp]> = [
      [{ PORT: 'abc' }, /PORT must be a whole number/],
      [{ PORT: '70000' }, /PORT must be between 0 and 65535/],
      [{ RATE_LIMITS: 'maybe' }, /RATE_LIMITS must be one of/],
      [{ ANALYTICS_THREAD: 'thread' }, /ANALYTICS_THREAD must be one of worker, main/],
      [{ PUBLIC_BASE_URL: 'ftp://x' }, /PUBLIC_BASE_URL must be an http\(s\) URL/],
      [{ ALLOWED_ORIGINS: 'not a url' }, /ALLOWED_ORIGINS/],
      [{ ALLOWED_ORIGINS: 'https://a.example/path' }, /ALLOWED_ORIGINS/],
      [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
      [{ FETCH_TIMEOUT_MS: '5' }, /FETCH_TIMEOUT_MS must be between/],
      [{ SHUTDOWN_TIMEOUT_MS: '25s' }, /SHUTDOWN_TIMEOUT_MS must be a whole number/],
      [{ SHUTDOWN_TIMEOUT_MS: '4000000' }, /SHUTDOWN_TIMEOUT_MS must be between 0 and 3600000/],
    ];
    for (const [env, msg] of bad) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
      expect(() => loadConfig(env)).toThrow(msg);
    }
  });
});
