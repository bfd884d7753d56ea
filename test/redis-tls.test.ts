/**
 * Issue 37, TLS to Redis in every topology, on real redis-server TLS ports (no plain port
 * open): one Redis by `rediss://` with the CA (a managed Redis: no client certificate), a
 * Sentinel set and a Cluster with REDIS_TLS=on and mutual TLS, each serving a link round trip
 * and an exact keyless limit over HTTP. A wrong CA, a missing client certificate, a name the
 * certificate does not carry and a plain client on a TLS port fail at start-up with a message
 * saying what to fix (never a hang); bad TLS settings are configuration errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { openRedisStore, type RedisStore } from '../src/state/redis/index.js';
import { listenTestApp, tempDir, type ListeningApp } from './harness.js';
import { describeRedis } from './redis.js';
import { jsonWithoutRequestId } from './request-ids.js';
import { makePki, startTlsCluster, startTlsRedis, startTlsSentinel, type TestPki, type TlsDeployment } from './redis-tls-servers.js';
import { startServerProcess, killServerProcesses } from './server-process.js';

const log = createLogger('silent');

/** A short link made, followed, and an exact keyless limit (4 calls a minute: the link was one). */
async function roundTripAndLimit(app: ListeningApp): Promise<void> {
  const made = await fetch(`${app.url}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/over-tls' }) });
  expect(made.status).toBe(201);
  const { code } = (await made.json()) as { code: string };
  const followed = await fetch(`${app.url}/s/${code}`, { redirect: 'manual' });
  expect(followed.status).toBe(302);
  expect(followed.headers.get('location')).toBe('https://example.com/over-tls');
  const statuses: number[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await fetch(`${app.url}/api/base-convert`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'ff', from: 'hex' }) });
    statuses.push(r.status);
  }
  expect(statuses).toStrictEqual([200, 200, 200, 429]);
}

const LIMITS = { RATE_LIMITS: 'on', PLAN_KEYLESS: '4/100/20', LOG_LEVEL: 'silent' };

describeRedis('Redis over TLS: one server, Sentinel and Cluster (issue 37)', () => {
  let pki: TestPki;
  const deployments: TlsDeployment[] = [];
  const apps: ListeningApp[] = [];
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    pki = await makePki();
  }, 60_000);
  afterAll(async () => {
    killServerProcesses();
    for (const a of apps) await a.close().catch(() => {});
    for (const s of stores) await s.close().catch(() => {});
    for (const d of deployments) await d.stop();
  });
  const mtls = () => ({ REDIS_TLS_CA_FILE: pki.ca, REDIS_TLS_CERT_FILE: pki.clientCert, REDIS_TLS_KEY_FILE: pki.clientKey });

  describe('one Redis (REDIS_URL rediss://)', () => {
    let single: TlsDeployment;
    let mutual: TlsDeployment;
    beforeAll(async () => {
      single = await startTlsRedis(pki, false);
      mutual = await startTlsRedis(pki, true);
      deployments.push(single, mutual);
    }, 60_000);

    it('with the CA: a link round trip and an exact limit', async () => {
      const app = await listenTestApp({ env: { REDIS_URL: `rediss://127.0.0.1:${single.ports[0]}`, REDIS_TLS_CA_FILE: pki.ca, REDIS_PREFIX: 'tls1:', ...LIMITS } });
      apps.push(app);
      await roundTripAndLimit(app);
    });

    it('a wrong CA: `serve` exits 1 at start-up naming REDIS_TLS_CA_FILE, within the connect timeout', async () => {
      const started = startServerProcess({ REDIS_URL: `rediss://127.0.0.1:${single.ports[0]}`, REDIS_TLS_CA_FILE: pki.otherCa });
      await expect(started).rejects.toThrow(/server exited with 1: [\s\S]*cannot reach Redis at rediss:\/\/127\.0\.0\.1:\d+ \(REDIS_URL\): .*certificate.*\. The Redis server's TLS certificate is not signed by a trusted CA: set REDIS_TLS_CA_FILE/);
    }, 30_000);

    it('mutual TLS: with the client certificate it connects; without it the message names REDIS_TLS_CERT_FILE', async () => {
      const url = `rediss://127.0.0.1:${mutual.ports[0]}`;
      const ok = await openRedisStore({ topology: { kind: 'single', url, tls: { ca: fs.readFileSync(pki.ca, 'utf8'), cert: fs.readFileSync(pki.clientCert, 'utf8'), key: fs.readFileSync(pki.clientKey, 'utf8') } }, prefix: 'tls2:', log, quiet: true });
      stores.push(ok);
      await ok.conn.redis.set('tls2:k', 'v');
      expect(await ok.conn.redis.get('tls2:k')).toBe('v');
      await expect(openRedisStore({ topology: { kind: 'single', url, tls: { ca: fs.readFileSync(pki.ca, 'utf8') } }, log, quiet: true, connectTimeoutMs: 3000 })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/^cannot reach Redis at rediss:.*The TLS handshake with Redis failed: .*client certificate \(REDIS_TLS_CERT_FILE and REDIS_TLS_KEY_FILE\)/),
      });
    });

    it('a plain redis:// client on the TLS port: the message says to use rediss://', async () => {
      await expect(openRedisStore({ url: `redis://127.0.0.1:${single.ports[0]}`, log, quiet: true, connectTimeoutMs: 3000 })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringContaining('if it only speaks TLS, use rediss://'),
      });
    });
  });

  describe('Sentinel (REDIS_TLS=on): sentinel, primary and replica on TLS ports', () => {
    let set: TlsDeployment;
    beforeAll(async () => {
      set = await startTlsSentinel(pki, 'tlsmain');
      deployments.push(set);
    }, 60_000);
    const env = () => ({ REDIS_SENTINELS: `127.0.0.1:${set.ports[2]}`, REDIS_SENTINEL_NAME: 'tlsmain', REDIS_TLS: 'on', REDIS_TLS_SERVERNAME: 'redis.test', ...mtls() });

    it('a link round trip (acknowledged by the replica over TLS: REDIS_WAIT_REPLICAS=1) and an exact limit', async () => {
      const app = await listenTestApp({ env: { ...env(), REDIS_WAIT_REPLICAS: '1', REDIS_PREFIX: 'tls3:', ...LIMITS } });
      apps.push(app);
      await roundTripAndLimit(app);
    });

    it('REDIS_WAIT_REPLICAS with the replica stopped: 503 says the link was written on the primary but not confirmed; the same externalId after it returns that link', async () => {
      const app = await listenTestApp({ env: { ...env(), REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '300', REDIS_PREFIX: 'tls6:', LOG_LEVEL: 'silent' } });
      apps.push(app);
      const post = (p: string, body: unknown, key?: string) =>
        fetch(app.url + p, { method: 'POST', headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) }, body: JSON.stringify(body) });
      const registered = await post('/api/auth/register', { email: 'wait@example.com' });
      expect(registered.status).toBe(201);
      const { api_key: key } = (await registered.json()) as { api_key: string };
      set.signal(1, 'SIGSTOP');
      let unsure: Response;
      try {
        unsure = await post('/api/shorten', { url: 'https://example.com/unsure', externalId: 'order-1', code: 'unsure-1' }, key);
      } finally {
        set.signal(1, 'SIGCONT');
      }
      expect(unsure.status).toBe(503);
      expect(unsure.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await jsonWithoutRequestId(unsure)).toStrictEqual({
        success: false,
        error: {
          code: 'STORAGE_UNAVAILABLE',
          message:
            'Written on the Redis primary but not confirmed by 1 replica within 300 ms; it may or may not survive a failover. Retrying is safe for idempotent calls (e.g. url_shorten with the same externalId); otherwise check whether it exists before retrying.',
          details: { writtenOnPrimary: true, replicasRequired: 1, waitTimeoutMs: 300 },
        },
      });
      // It was written: the link answers, and the retry with the same externalId is that link.
      expect((await fetch(`${app.url}/s/unsure-1`, { redirect: 'manual' })).headers.get('location')).toBe('https://example.com/unsure');
      const retried = await post('/api/shorten', { url: 'https://example.com/unsure', externalId: 'order-1', code: 'unsure-1' }, key);
      expect(retried.status).toBe(200);
      expect(await retried.json()).toMatchObject({ code: 'unsure-1', existing: true });
    });

    it('without REDIS_TLS_SERVERNAME the redis.test certificate does not match 127.0.0.1: the message says so', async () => {
      const config = loadConfig({ ...env(), REDIS_TLS_SERVERNAME: '' });
      await expect(openRedisStore({ topology: config.redis!, log, quiet: true, connectTimeoutMs: 3000 })).rejects.toMatchObject({
        message: expect.stringMatching(/^cannot reach Redis at primary "tlsmain" via sentinels 127\.0\.0\.1:\d+ over TLS \(REDIS_SENTINELS\): .*REDIS_TLS_SERVERNAME/),
      });
    });
  });

  describe('Sentinel with a plain sentinel in front of TLS data nodes (REDIS_TLS=on, REDIS_SENTINEL_TLS=off)', () => {
    let set: TlsDeployment;
    beforeAll(async () => {
      set = await startTlsSentinel(pki, 'mixmain', { plainSentinel: true });
      deployments.push(set);
    }, 60_000);
    const env = (extra: Record<string, string> = {}) => ({ REDIS_SENTINELS: `127.0.0.1:${set.ports[2]}`, REDIS_SENTINEL_NAME: 'mixmain', REDIS_TLS: 'on', REDIS_SENTINEL_TLS: 'off', REDIS_TLS_SERVERNAME: 'redis.test', ...mtls(), ...extra });

    it('a link round trip and an exact limit: the sentinel asked in plain text, the primary over TLS', async () => {
      const app = await listenTestApp({ env: { ...env(), REDIS_PREFIX: 'tls7:', ...LIMITS } });
      apps.push(app);
      await roundTripAndLimit(app);
      const store = await openRedisStore({ topology: loadConfig(env()).redis!, prefix: 'tls8:', log, quiet: true });
      stores.push(store);
      expect(store.conn.where).toBe(`primary "mixmain" via sentinels 127.0.0.1:${set.ports[2]} (primary over TLS, sentinels plain)`);
      await store.conn.redis.set('tls8:{x}', 'y');
      // The primary listens on its TLS port only: the write went there over TLS.
      expect(await store.conn.redis.get('tls8:{x}')).toBe('y');
    });

    it('without REDIS_SENTINEL_TLS=off, TLS to the plain sentinel fails at start-up with a message, not a hang', async () => {
      const config = loadConfig(env({ REDIS_SENTINEL_TLS: '' }));
      await expect(openRedisStore({ topology: config.redis!, log, quiet: true, connectTimeoutMs: 3000 })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/^cannot reach Redis at primary "mixmain" via sentinels 127\.0\.0\.1:\d+ over TLS \(REDIS_SENTINELS\): /),
      });
    });
  });

  describe('Cluster (REDIS_TLS=on, tls-cluster yes)', () => {
    let cluster: TlsDeployment;
    beforeAll(async () => {
      cluster = await startTlsCluster(pki);
      deployments.push(cluster);
    }, 90_000);

    it('a link round trip and an exact limit, with keys on every master', async () => {
      const env = { REDIS_CLUSTER_NODES: `127.0.0.1:${cluster.ports[0]}`, REDIS_TLS: 'on', REDIS_TLS_SERVERNAME: 'redis.test', ...mtls(), REDIS_PREFIX: 'tls4:', ...LIMITS };
      const app = await listenTestApp({ env });
      apps.push(app);
      await roundTripAndLimit(app);
      const store = await openRedisStore({ topology: loadConfig(env).redis!, prefix: 'tls5:', log, quiet: true });
      stores.push(store);
      const masters = await (store.conn.redis as import('ioredis').Cluster).nodes('master');
      expect(masters).toHaveLength(3);
      // One key per master (hash tags of different slots), each read back over its TLS connection.
      for (const tag of ['a', 'b', 'c', 'd', 'e', 'f']) await store.conn.redis.set(`tls5:{${tag}}`, tag);
      const perNode = await Promise.all(masters.map((m) => m.dbsize()));
      expect(perNode.every((n) => n > 0)).toBe(true);
    });
  });
});

describe('TLS settings are checked at start-up (configuration errors, exit 2)', () => {
  const dir = tempDir('dtb-tls-conf-');
  const pem = path.join(dir, 'ca.pem');
  fs.writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n');
  const notPem = path.join(dir, 'ca.txt');
  fs.writeFileSync(notPem, 'hello');
  const cluster = { REDIS_CLUSTER_NODES: '127.0.0.1:7000' };
  const cases: Array<[string, Record<string, string>, string | RegExp]> = [
    ['a missing CA file', { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CA_FILE: path.join(dir, 'nope.pem') }, `REDIS_TLS_CA_FILE: cannot read "${path.join(dir, 'nope.pem')}" (ENOENT)`],
    ['a directory as the CA file', { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CA_FILE: dir }, `REDIS_TLS_CA_FILE: cannot read "${dir}" (EISDIR)`],
    ['a file that is not PEM', { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CA_FILE: notPem }, `REDIS_TLS_CA_FILE: "${notPem}" is not a PEM file (no -----BEGIN … ----- line)`],
    ['a PEM OpenSSL cannot read', { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CA_FILE: pem }, /^REDIS_TLS_CA_FILE\/CERT_FILE\/KEY_FILE: /],
    ['a certificate without its key', { ...cluster, REDIS_TLS: 'on', REDIS_TLS_CERT_FILE: pem }, 'REDIS_TLS_CERT_FILE needs REDIS_TLS_KEY_FILE (a client certificate and its private key, for mutual TLS)'],
    ['REDIS_TLS=on with redis://', { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_TLS: 'on' }, 'REDIS_TLS=on with REDIS_URL: write the URL as rediss://host:port (TLS) instead'],
    ['REDIS_TLS=off with rediss://', { REDIS_URL: 'rediss://127.0.0.1:6379', REDIS_TLS: 'off' }, 'REDIS_TLS=off contradicts REDIS_URL rediss:// (which means TLS): use redis:// for a plain connection'],
    ['a CA file without TLS', { ...cluster, REDIS_TLS_CA_FILE: pem }, 'REDIS_TLS_CA_FILE needs TLS: REDIS_TLS=on'],
    ['a CA file with a plain REDIS_URL', { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_TLS_CA_FILE: pem }, 'REDIS_TLS_CA_FILE needs TLS: REDIS_URL rediss://host:port'],
    ['REDIS_TLS without Redis', { REDIS_TLS: 'on' }, 'REDIS_TLS needs a Redis deployment (REDIS_SENTINELS or REDIS_CLUSTER_NODES; with REDIS_URL write rediss://)'],
    ['a bad REDIS_TLS', { ...cluster, REDIS_TLS: 'yes please' }, 'REDIS_TLS must be on or off, got "yes please"'],
    ['a bad server name', { ...cluster, REDIS_TLS: 'on', REDIS_TLS_SERVERNAME: 'redis test' }, 'REDIS_TLS_SERVERNAME must be a host name, got "redis test"'],
    ['REDIS_SENTINEL_TLS without sentinels', { ...cluster, REDIS_TLS: 'on', REDIS_SENTINEL_TLS: 'off' }, 'REDIS_SENTINEL_TLS is for REDIS_SENTINELS (whether the sentinels speak TLS); for the data nodes use REDIS_TLS'],
    ['a bad REDIS_SENTINEL_TLS', { REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_SENTINEL_TLS: 'maybe' }, 'REDIS_SENTINEL_TLS must be on or off, got "maybe"'],
    ['a CA file with neither TLS switch on under Sentinel', { REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_SENTINEL_TLS: 'off', REDIS_TLS_CA_FILE: pem }, 'REDIS_TLS_CA_FILE needs TLS: REDIS_TLS=on'],
  ];
  for (const [what, env, message] of cases) {
    it(what, () => {
      let err: unknown;
      try {
        loadConfig(env);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      if (typeof message === 'string') expect((err as Error).message).toBe(message);
      else expect((err as Error).message).toMatch(message);
    });
  }

  it('rediss:// alone is TLS with the system roots; REDIS_TLS=on on a cluster carries the files read', () => {
    expect(loadConfig({ REDIS_URL: 'rediss://cache.example.com:6380' }).redis).toStrictEqual({ kind: 'single', url: 'rediss://cache.example.com:6380', tls: {} });
    expect(loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).redis).toStrictEqual({ kind: 'single', url: 'redis://127.0.0.1:6379' });
    expect(loadConfig({ ...cluster, REDIS_TLS: 'on', REDIS_TLS_SERVERNAME: 'redis.test' }).redis).toStrictEqual({ kind: 'cluster', nodes: [{ host: '127.0.0.1', port: 7000 }], tls: { servername: 'redis.test' } });
  });

  it('REDIS_SENTINEL_TLS: the sentinels as the data nodes unless it says otherwise, either way round', () => {
    const sentinel = { REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_TLS_SERVERNAME: 'redis.test' };
    const base = { kind: 'sentinel', sentinels: [{ host: '127.0.0.1', port: 26379 }], name: 'm' };
    const tls = { servername: 'redis.test' };
    expect(loadConfig({ ...sentinel, REDIS_TLS: 'on' }).redis).toStrictEqual({ ...base, tls, sentinelTls: tls });
    expect(loadConfig({ ...sentinel, REDIS_TLS: 'on', REDIS_SENTINEL_TLS: 'off' }).redis).toStrictEqual({ ...base, tls });
    expect(loadConfig({ ...sentinel, REDIS_SENTINEL_TLS: 'on' }).redis).toStrictEqual({ ...base, sentinelTls: tls });
    expect(loadConfig({ REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'm', REDIS_SENTINEL_TLS: 'off' }).redis).toStrictEqual(base);
  });
});
