/**
 * Issue 37: a keyed REST call on Redis uses a cached key record, confirmed by the limit script
 * itself: the script compares the generation the record was cached under with the key's
 * generation in Redis (bumped by every writer after its write), consumes nothing when they
 * differ, and the instance reads the record again. So a plan change, a deletion or an import
 * made through ANY instance or process applies to the very next call on every instance.
 */
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { Auth } from '../src/auth/auth.js';
import { API_KEYS, createApiKey, keysChanged, setPlan } from '../src/auth/keys.js';
import { createLogger } from '../src/log.js';
import { closeServices, createServices, type Services } from '../src/services.js';
import { openRedisStore } from '../src/state/redis/index.js';
import type { RedisStore } from '../src/state/redis/store.js';
import { exportStore, importStore } from '../src/state/transfer.js';
import type { SharedWindows, Store } from '../src/state/types.js';
import { listenTestApp, testConfig, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

let redis: TestRedis;
const apps: ListeningApp[] = [];
const stores: RedisStore[] = [];
const services: Services[] = [];
const log = createLogger('silent');

function env(prefix: string): Record<string, string> {
  return { REDIS_URL: redis.url, REDIS_PREFIX: prefix, RATE_LIMITS: 'on', LOG_LEVEL: 'silent' };
}

/** Two instances on one Redis prefix, and a third store (another process: the CLI, an import). */
async function twoInstances(): Promise<{ prefix: string; a: ListeningApp; b: ListeningApp; cli: RedisStore }> {
  const prefix = redis.prefix();
  const a = await listenTestApp({ env: env(prefix) });
  const b = await listenTestApp({ env: env(prefix) });
  apps.push(a, b);
  const cli = await openRedisStore({ url: redis.url, prefix, log, quiet: true });
  stores.push(cli);
  return { prefix, a, b, cli };
}

async function register(node: ListeningApp, email: string): Promise<string> {
  const r = await fetch(`${node.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) });
  expect(r.status).toBe(201);
  return ((await r.json()) as { api_key: string }).api_key;
}

function convert(node: ListeningApp, key: string): Promise<Response> {
  return fetch(`${node.url}/api/base-convert`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` }, body: '{"value":"7"}' });
}

/**
 * Script runs so far (EVALSHA and EVAL), index reads (a key lookup by hash is one ZRANGEBYLEX
 * on the key_hash index) and GETs (a generation read, in the limit script or alone), from
 * Redis's own command statistics (commands inside scripts included).
 */
async function commands(s: RedisStore): Promise<{ scripts: number; lookups: number; gets: number }> {
  const info = await s.conn.redis.info('commandstats');
  let scripts = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) scripts += Number(m[1]);
  const calls = (cmd: string) => Number(new RegExp(`^cmdstat_${cmd}:calls=(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  return { scripts, lookups: calls('zrangebylex'), gets: calls('get') };
}

/** The budget a limited answer reports: the minute's limit and what is left of it. */
const budget = (r: Response) => ({ status: r.status, limit: r.headers.get('ratelimit-limit'), remaining: r.headers.get('ratelimit-remaining') });

describeRedis('the key cache on Redis, confirmed by the limit script (issue 37)', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const a of apps.splice(0)) await a.close().catch(() => {});
    for (const s of services.splice(0)) await closeServices(s).catch(() => {});
    for (const s of stores.splice(0)) await s.close().catch(() => {});
    await redis?.stop();
  });

  it('a cached key costs one script call per call (the limit check) and no key lookup', async () => {
    const { b, cli } = await twoInstances();
    const key = await register(b, 'lean@example.com');
    expect(budget(await convert(b, key))).toStrictEqual({ status: 200, limit: '10', remaining: '9' });
    const before = await commands(cli);
    for (let i = 0; i < 5; i++) expect((await convert(b, key)).status).toBe(200);
    const after = await commands(cli);
    // The limit script only, each reading the generation once; no lookup by hash.
    expect([after.scripts - before.scripts, after.lookups - before.lookups, after.gets - before.gets]).toStrictEqual([5, 0, 5]);
    expect(b.services.auth.keys.size).toBe(1);
  });

  it('a plan changed through another process applies to the very next call on every instance; the stale check consumed nothing', async () => {
    const { a, b, cli } = await twoInstances();
    const key = await register(a, 'plan@example.com');
    expect(budget(await convert(a, key))).toStrictEqual({ status: 200, limit: '10', remaining: '9' });
    expect(budget(await convert(b, key))).toStrictEqual({ status: 200, limit: '10', remaining: '8' });
    await setPlan(cli, 'plan@example.com', 'pro');
    // Both instances hold the free record; the first call on each is checked again, under pro.
    expect(budget(await convert(b, key))).toStrictEqual({ status: 200, limit: '60', remaining: '57' });
    expect(budget(await convert(a, key))).toStrictEqual({ status: 200, limit: '60', remaining: '56' });
    await setPlan(cli, 'plan@example.com', 'free');
    expect(budget(await convert(b, key))).toStrictEqual({ status: 200, limit: '10', remaining: '5' });
  });

  it('a free tool (auth_info: a look that spends nothing) from a cached key is checked under the generation too', async () => {
    const { a, b, cli } = await twoInstances();
    const key = await register(a, 'look@example.com');
    const info = () => fetch(`${b.url}/api/auth/info`, { headers: { authorization: `Bearer ${key}` } });
    expect(budget(await info())).toStrictEqual({ status: 200, limit: '10', remaining: '10' });
    expect(budget(await convert(b, key))).toStrictEqual({ status: 200, limit: '10', remaining: '9' });
    await setPlan(cli, 'look@example.com', 'pro');
    expect(budget(await info())).toStrictEqual({ status: 200, limit: '60', remaining: '59' });
    expect(budget(await convert(b, key))).toStrictEqual({ status: 200, limit: '60', remaining: '58' });
  });

  it('a key record deleted by another process: the next call on an instance that cached it is a 401, as an unknown key is', async () => {
    const { a, b, cli } = await twoInstances();
    const key = await register(a, 'gone@example.com');
    expect((await convert(b, key)).status).toBe(200);
    const stored = await cli.collection(API_KEYS).get('gone@example.com');
    // What any deleter does: the write, then the key's generation.
    await cli.collection(API_KEYS).delete('gone@example.com');
    await keysChanged(cli, [stored!.key_id]);
    const r = await convert(b, key);
    expect(r.status).toBe(401);
    expect(r.headers.get('www-authenticate')).toBe('Bearer realm="devtoolbox", error="invalid_token"');
    const body = (await r.json()) as { success: boolean; error: { code: string; message: string } };
    expect([body.success, body.error.code, body.error.message]).toStrictEqual([false, 'UNAUTHORIZED', 'Unknown API key']);
    // And an unknown key answers the same on an instance that never saw it.
    const fresh = await convert(a, key);
    expect(fresh.status).toBe(401);
    expect(b.services.auth.keys.size).toBe(0);
  });

  it('an import that replaces a key record applies to the next call on every instance (old key 401, new key admitted)', async () => {
    const { a, b, cli } = await twoInstances();
    const oldKey = await register(a, 'moved@example.com');
    expect((await convert(b, oldKey)).status).toBe(200);
    // Another deployment's key for the same address, exported and merged in.
    const elsewhere = await openRedisStore({ url: redis.url, prefix: redis.prefix(), log, quiet: true });
    stores.push(elsewhere);
    const { api_key: newKey } = await createApiKey(elsewhere, 'moved@example.com', Date.now());
    let text = '';
    await exportStore(elsewhere, new Writable({ write: (c, _e, cb) => ((text += String(c)), cb()) }), { known: [API_KEYS] });
    await importStore(cli, Readable.from([text]), { merge: true, known: [API_KEYS] });
    expect((await convert(b, oldKey)).status).toBe(401);
    expect(budget(await convert(b, newKey))).toStrictEqual({ status: 200, limit: '10', remaining: '9' });
  });

  it('over MCP (HTTP, a real SDK client): a tool call from a cached key costs the limit script and no lookup; any other request looks the key up', async () => {
    const { b, cli } = await twoInstances();
    const key = await register(b, 'mcp@example.com');
    const client = await b.httpClient({ authorization: `Bearer ${key}` });
    // The connect's requests (not calls) looked the key up; the first one filled the cache.
    await vi.waitFor(() => expect(b.services.auth.keys.size).toBe(1));
    const call = async () => {
      const r = await client.callTool({ name: 'base_convert', arguments: { value: '7' } });
      expect(r.isError ?? false).toBe(false);
      return r;
    };
    await call();
    const before = await commands(cli);
    for (let i = 0; i < 5; i++) await call();
    const after = await commands(cli);
    expect([after.scripts - before.scripts, after.lookups - before.lookups, after.gets - before.gets]).toStrictEqual([5, 0, 5]);
    // A list is no call: nothing would check the cached record, so the key is looked up.
    await client.listTools();
    const listed = await commands(cli);
    expect([listed.scripts - after.scripts, listed.lookups - after.lookups]).toStrictEqual([1, 1]);
  });

  it('over MCP: a plan change applies to the next call; a key deleted by another process makes the next call and the next list a 401', async () => {
    const { a, b, cli } = await twoInstances();
    const key = await register(a, 'mcpgone@example.com');
    const client = await b.httpClient({ authorization: `Bearer ${key}` });
    await vi.waitFor(() => expect(b.services.auth.keys.size).toBe(1));
    const call = () => client.callTool({ name: 'base_convert', arguments: { value: '7' } });
    // Cached under free (10 a minute); pro (60) set through another process: twelve calls pass,
    // so every one was checked under the new record, not the cached one.
    await setPlan(cli, 'mcpgone@example.com', 'pro');
    for (let i = 0; i < 12; i++) expect((await call()).isError ?? false).toBe(false);
    const stored = await cli.collection(API_KEYS).get('mcpgone@example.com');
    await cli.collection(API_KEYS).delete('mcpgone@example.com');
    await keysChanged(cli, [stored!.key_id]);
    // HTTP 401 with the JSON-RPC error an unknown key gets at the door (the SDK's error carries the status).
    await expect(call()).rejects.toMatchObject({ code: 401, message: expect.stringContaining('Unknown API key') });
    await expect(client.listTools()).rejects.toMatchObject({ code: 401, message: expect.stringContaining('Unknown API key') });
    expect(b.services.auth.keys.size).toBe(0);
  });

  it('unknown keys are never cached: each costs one lookup, and the cache stays empty', async () => {
    const { b, cli } = await twoInstances();
    const before = await commands(cli);
    for (let i = 0; i < 20; i++) expect((await convert(b, `dtb_${String(i).padStart(32, 'x')}`)).status).toBe(401);
    const after = await commands(cli);
    // One lookup script each (no limit check, no generation read), as without the cache.
    expect([after.scripts - before.scripts, after.lookups - before.lookups, after.gets - before.gets]).toStrictEqual([20, 20, 0]);
    expect(b.services.auth.keys.size).toBe(0);
  });

  it('the cache fill reads the generation BEFORE the record it keeps: a plan change landing between a record read and the generation read is not cached under the new generation', async () => {
    const prefix = redis.prefix();
    const svc = await createServices(testConfig(env(prefix)));
    services.push(svc);
    const { api_key } = await createApiKey(svc.store, 'race@example.com', Date.now());
    const cli = await openRedisStore({ url: redis.url, prefix, log, quiet: true });
    stores.push(cli);
    // Scripted interleaving: the writer's whole change (record, then generation) runs just before
    // the reader's first generation read, i.e. after the reader read the record once.
    let writes = 0;
    const windows = svc.store.windows!;
    const scripted: SharedWindows = {
      rate: (...args) => windows.rate(...args),
      slide: (...args) => windows.slide(...args),
      bump: (subjects) => windows.bump(subjects),
      generation: async (subject) => {
        if (writes++ === 0) await setPlan(cli, 'race@example.com', 'pro');
        return windows.generation(subject);
      },
    };
    const store = new Proxy(svc.store, {
      get: (t, p) => {
        if (p === 'windows') return scripted;
        const v = Reflect.get(t, p, t) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
      },
    }) as Store;
    const auth = new Auth({ ...svc, store });
    const cred = { peer: '127.0.0.1', authorization: `Bearer ${api_key}`, admitted: true };
    const tool = { metering: 'metered' as const };
    const seen: Array<[string, string | undefined, string | undefined]> = [];
    for (let i = 0; i < 3; i++) {
      const caller = await auth.resolve(cred, 'rest');
      const h = await auth.admit(caller, tool);
      seen.push([auth.planOf(caller), h?.['RateLimit-Limit'], h?.['RateLimit-Remaining']]);
    }
    // Had the record read before the generation been cached, every call would run on free (10).
    expect(seen).toStrictEqual([
      ['pro', '60', '59'],
      ['pro', '60', '58'],
      ['pro', '60', '57'],
    ]);
    expect(writes).toBe(1);
    expect(auth.keys.size).toBe(1);
  });
});
