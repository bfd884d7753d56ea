/**
 * Issue 37: the calls of one subject that arrive in one turn of the event loop are checked by
 * one script call on Redis, with the same answers as the same calls one after another, and
 * limits stay exact when several instances batch at once.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey, setPlan } from '../src/auth/keys.js';
import { createLogger } from '../src/log.js';
import { closeServices, createServices, type Services } from '../src/services.js';
import { openRedisStore } from '../src/state/redis/index.js';
import type { RedisStore } from '../src/state/redis/store.js';
import type { RateWindowsState } from '../src/state/types.js';
import { testConfig } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

let redis: TestRedis;
const stores: RedisStore[] = [];
const log = createLogger('silent');

async function store(prefix: string): Promise<RedisStore> {
  const s = await openRedisStore({ url: redis.url, prefix, log, quiet: true });
  stores.push(s);
  return s;
}

/** Script runs so far (EVALSHA and EVAL), from Redis's own command statistics. */
async function scriptCalls(s: RedisStore): Promise<number> {
  const info = await s.conn.redis.info('commandstats');
  let n = 0;
  for (const m of info.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) n += Number(m[1]);
  return n;
}

const counts = (s: RateWindowsState) => ({ allowed: s.allowed, minuteUsed: s.minuteUsed, dayUsed: s.dayUsed });

describeRedis('the Redis limiter batches one subject per turn (issue 37)', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  const services: Services[] = [];
  afterAll(async () => {
    for (const s of services.splice(0)) await closeServices(s);
    for (const s of stores.splice(0)) await s.close();
    await redis?.stop();
  });

  it('12 calls in one turn → one script call, answered exactly as 12 calls one after another', async () => {
    const s = await store(redis.prefix());
    await s.windows.rate('warm-up', 5, 100, true);
    const before = await scriptCalls(s);
    const batched = await Promise.all(Array.from({ length: 12 }, () => s.windows.rate('a', 5, 100, true)));
    const after = await scriptCalls(s);
    // INFO itself is no script: one script call for the 12.
    expect(after - before).toBe(1);
    const sequential: RateWindowsState[] = [];
    for (let i = 0; i < 12; i++) sequential.push(await s.windows.rate('b', 5, 100, true));
    expect(batched.map(counts)).toStrictEqual(sequential.map(counts));
    expect(batched.map(counts)).toStrictEqual([
      ...[1, 2, 3, 4, 5].map((n) => ({ allowed: true, minuteUsed: n, dayUsed: n })),
      ...Array.from({ length: 7 }, () => ({ allowed: false, minuteUsed: 5, dayUsed: 5 })),
    ]);
    // The minute window resets from the first call of the batch (one instant on Redis's clock).
    for (const b of batched) {
      expect(b.first).toBe(batched[0]!.now);
      expect(b.oldestCounted).toBe(batched[0]!.now);
      expect(b.now).toBe(batched[0]!.now);
    }
  });

  it('the day window caps a batch too, and a look afterwards takes nothing', async () => {
    const s = await store(redis.prefix());
    const r = await Promise.all(Array.from({ length: 6 }, () => s.windows.rate('d', 100, 3, true)));
    expect(r.map(counts)).toStrictEqual([
      { allowed: true, minuteUsed: 1, dayUsed: 1 },
      { allowed: true, minuteUsed: 2, dayUsed: 2 },
      { allowed: true, minuteUsed: 3, dayUsed: 3 },
      ...Array.from({ length: 3 }, () => ({ allowed: false, minuteUsed: 3, dayUsed: 3 })),
    ]);
    const look = await s.windows.rate('d', 100, 3, false);
    expect(counts(look)).toStrictEqual({ allowed: false, minuteUsed: 3, dayUsed: 3 });
    const roomy = await s.windows.rate('d', 100, 10, false);
    expect(counts(roomy)).toStrictEqual({ allowed: true, minuteUsed: 3, dayUsed: 3 });
  });

  it('three instances batching the same subject at once: exactly the limit admitted', async () => {
    const prefix = redis.prefix();
    const nodes = [await store(prefix), await store(prefix), await store(prefix)];
    const all = await Promise.all(nodes.flatMap((n) => Array.from({ length: 40 }, () => n.windows.rate('shared', 50, 1000, true))));
    expect(all.filter((x) => x.allowed)).toHaveLength(50);
    // Every admitted call saw a different count: 1..50, each once.
    expect(all.filter((x) => x.allowed).map((x) => x.minuteUsed).sort((a, b) => a - b)).toStrictEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(counts(await nodes[0]!.windows.rate('shared', 50, 1000, false))).toStrictEqual({ allowed: false, minuteUsed: 50, dayUsed: 50 });
  });

  it('a plan change in the middle of a turn: each set of limits is its own batch, both exact', async () => {
    const s = await store(redis.prefix());
    const free = Array.from({ length: 4 }, () => s.windows.rate('p', 2, 100, true));
    const pro = Array.from({ length: 4 }, () => s.windows.rate('p', 5, 100, true));
    const [f, p] = [await Promise.all(free), await Promise.all(pro)];
    expect(f.map(counts)).toStrictEqual([
      { allowed: true, minuteUsed: 1, dayUsed: 1 },
      { allowed: true, minuteUsed: 2, dayUsed: 2 },
      { allowed: false, minuteUsed: 2, dayUsed: 2 },
      { allowed: false, minuteUsed: 2, dayUsed: 2 },
    ]);
    expect(p.map(counts)).toStrictEqual([
      { allowed: true, minuteUsed: 3, dayUsed: 3 },
      { allowed: true, minuteUsed: 4, dayUsed: 4 },
      { allowed: true, minuteUsed: 5, dayUsed: 5 },
      { allowed: false, minuteUsed: 5, dayUsed: 5 },
    ]);
  });

  it('a batch larger than MAX_BATCH is split and still exact', async () => {
    const s = await store(redis.prefix());
    const r = await Promise.all(Array.from({ length: 1200 }, () => s.windows.rate('big', 1000, 100_000, true)));
    expect(r.filter((x) => x.allowed)).toHaveLength(1000);
    expect(r.filter((x) => x.allowed).map((x) => x.minuteUsed)).toStrictEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    expect(r.filter((x) => !x.allowed).every((x) => x.minuteUsed === 1000)).toBe(true);
  });

  it('several subjects in one turn: one script call each, sent together, each exact', async () => {
    const s = await store(redis.prefix());
    await s.windows.rate('warm-up', 5, 100, true);
    const before = await scriptCalls(s);
    const subjects = ['x', 'y', 'z'];
    const turn = await Promise.all(subjects.map((sub) => Promise.all(Array.from({ length: 4 }, () => s.windows.rate(sub, 3, 100, true)))));
    expect(await scriptCalls(s)).toBe(before + 3);
    const expected = [1, 2, 3].map((n) => ({ allowed: true, minuteUsed: n, dayUsed: n }));
    for (const answers of turn) expect(answers.map(counts)).toStrictEqual([...expected, { allowed: false, minuteUsed: 3, dayUsed: 3 }]);
  });

  it('Redis gone: the calls of one subject and of several subjects in a turn fail as UNAVAILABLE (a 503), then recover', async () => {
    const own = await startRedis();
    const s = await openRedisStore({ url: own.url, prefix: 'gone:', log, quiet: true });
    try {
      await s.windows.rate('w', 5, 100, true);
      await own.stop(true);
      const one = Promise.all(Array.from({ length: 3 }, () => s.windows.rate('one', 5, 100, true)));
      await expect(one).rejects.toMatchObject({ name: 'StoreError', code: 'UNAVAILABLE' });
      const several = ['a', 'b', 'c'].map((sub) => s.windows.rate(sub, 5, 100, true));
      for (const p of several) await expect(p).rejects.toMatchObject({ name: 'StoreError', code: 'UNAVAILABLE' });
      await own.start();
      let back: RateWindowsState | undefined;
      for (let i = 0; i < 100 && !back; i++) {
        back = await s.windows.rate('a', 5, 100, true).catch(() => undefined);
        if (!back) await new Promise((r) => setTimeout(r, 50));
      }
      expect(back && counts(back)).toStrictEqual({ allowed: true, minuteUsed: 1, dayUsed: 1 });
    } finally {
      await s.close();
      await own.stop();
    }
  });

  it('requests with one key in one turn share one key lookup; a plan changed before the next turn is seen', async () => {
    const prefix = redis.prefix();
    const svc = await createServices(testConfig({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, RATE_LIMITS: 'on', LOG_LEVEL: 'silent' }));
    services.push(svc);
    const { api_key, record } = await createApiKey(svc.store, 'batch@example.com', Date.now());
    const probe = await store(prefix);
    const cred = { peer: '127.0.0.1', authorization: `Bearer ${api_key}` };
    await svc.auth.resolve(cred, 'rest');
    const before = await scriptCalls(probe);
    const callers = await Promise.all(Array.from({ length: 10 }, () => svc.auth.resolve(cred, 'rest')));
    expect(await scriptCalls(probe)).toBe(before + 1);
    expect(callers.map((c) => c.keyId)).toStrictEqual(Array.from({ length: 10 }, () => record.key_id));
    expect(svc.auth.planOf(callers[0]!)).toBe('free');
    // Another process (the CLI) changes the plan in Redis: the next request's lookup reads it.
    const cli = await store(prefix);
    await setPlan(cli, 'batch@example.com', 'pro');
    const mid = await scriptCalls(probe);
    const next = await svc.auth.resolve(cred, 'rest');
    expect(svc.auth.planOf(next)).toBe('pro');
    expect(await scriptCalls(probe)).toBe(mid + 1);
  });
});
