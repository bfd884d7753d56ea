import { afterEach, describe, expect, it } from 'vitest';
import { toolHarness, type ToolHarness } from '../../test/harness.js';
import { manualClock } from '../core/clock.js';
import type { ToolError } from '../errors.js';
import type { Services } from '../services.js';
import { LINKS, linkOwnerKey, utcDay } from '../tools/shortener/links.js';
import { urlShorten } from '../tools/shortener/url-shorten.js';
import type { Caller } from '../registry.js';
import { createApiKey, setPlan } from './keys.js';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
let current: ToolHarness | undefined;
afterEach(async () => {
  if (current) await current.close();
  current = undefined;
});

async function setup(env: Record<string, string> = { RATE_LIMITS: 'on', PLAN_KEYLESS: '10/100/100' }) {
  const clock = manualClock(T0);
  // The file store, as before the harness: the daily count and insert are the store's (insertCapped).
  const h = (current = await toolHarness({ env, clock, disk: true }));
  return { h, s: h.services, clock };
}

function shorten(h: ToolHarness, caller: Partial<Caller>, n: number) {
  return Promise.allSettled(Array.from({ length: n }, () => h.run(urlShorten, { url: 'https://example.com/x' }, { caller: { transport: 'rest', ...caller } })));
}

const outcome = (r: PromiseSettledResult<unknown>[]) => ({
  ok: r.filter((x) => x.status === 'fulfilled').length,
  limited: r.filter((x) => x.status === 'rejected' && (x.reason as ToolError).code === 'RATE_LIMITED').length,
});

/** Files `n` links under an owner for today, as if created earlier (or before a restart). */
async function seedLinks(services: Services, owner: string, keyId: string | null, n: number) {
  const day = utcDay(T0);
  for (let i = 0; i < n; i++) {
    await services.store.collection(LINKS).insert(
      { code: `seed${i}`, url: 'https://example.com/', createdAt: new Date(T0).toISOString(), creator: owner, creatorKeyId: keyId, creatorDay: `${owner}|${day}` },
      { durability: 'lazy' },
    );
  }
}

describe('short links per day (counted from the stored links)', () => {
  it('keyless: 100 per address per UTC day, exact under concurrency', async () => {
    const { h, s, clock } = await setup();
    const anon = { keyId: null, ip: '203.0.113.9' };
    await seedLinks(s, linkOwnerKey(anon), null, 95);
    expect(outcome(await shorten(h, anon, 9))).toStrictEqual({ ok: 5, limited: 4 });
    const [refused] = await shorten(h, anon, 1);
    const err = (refused as PromiseRejectedResult).reason as ToolError;
    expect(err.toJSON()).toStrictEqual({
      code: 'RATE_LIMITED',
      message: 'Short-link quota reached: 100 links per UTC day on the keyless plan; retry after 2026-11-23T00:00:00.000Z',
      details: { limit: 'short_links_per_day', quota: 100, used: 100, retry_after: 54000, retry_at: '2026-11-23T00:00:00.000Z' },
    });
    expect(err.headers).toStrictEqual({ 'Retry-After': '54000' });
    // Another address has its own quota; the next day starts again.
    expect(outcome(await shorten(h, { keyId: null, ip: '203.0.113.10' }, 1))).toStrictEqual({ ok: 1, limited: 0 });
    clock.t = Date.parse('2026-11-23T00:00:00.000Z');
    expect(outcome(await shorten(h, anon, 1))).toStrictEqual({ ok: 1, limited: 0 });
  });

  it('pro keys get 1000, free keys 100', async () => {
    const { h, s } = await setup();
    const pro = await createApiKey(s.store, 'pro@example.com', T0);
    await setPlan(s.store, 'pro@example.com', 'pro');
    await seedLinks(s, `key:${pro.record.key_id}`, pro.record.key_id, 998);
    expect(outcome(await shorten(h, { keyId: pro.record.key_id }, 4))).toStrictEqual({ ok: 2, limited: 2 });

    const free = await createApiKey(s.store, 'free@example.com', T0);
    const owner = `key:${free.record.key_id}`;
    for (let i = 0; i < 99; i++) {
      await s.store.collection(LINKS).insert(
        { code: `free${i}`, url: 'https://example.com/', createdAt: new Date(T0).toISOString(), creator: owner, creatorKeyId: free.record.key_id, creatorDay: `${owner}|${utcDay(T0)}` },
        { durability: 'lazy' },
      );
    }
    expect(outcome(await shorten(h, { keyId: free.record.key_id }, 3))).toStrictEqual({ ok: 1, limited: 2 });
  });

  it('a refused or failed creation does not hold the owner up', async () => {
    const { h } = await setup();
    const anon = { keyId: null, ip: '198.51.100.1' };
    const caller: Partial<Caller> = { transport: 'rest', ...anon };
    await h.run(urlShorten, { url: 'https://example.com/', code: 'taken' }, { caller });
    await expect(h.run(urlShorten, { url: 'https://example.com/', code: 'taken' }, { caller })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(outcome(await shorten(h, anon, 2))).toStrictEqual({ ok: 2, limited: 0 });
  });

  it('is off for local transports and with RATE_LIMITS=off', async () => {
    const { h, s } = await setup({ RATE_LIMITS: 'off' });
    const anon = { keyId: null, ip: '203.0.113.9' };
    await seedLinks(s, linkOwnerKey(anon), null, 100);
    expect(outcome(await shorten(h, anon, 2))).toStrictEqual({ ok: 2, limited: 0 });
    await h.close();
    const on = await setup();
    await seedLinks(on.s, linkOwnerKey({ keyId: null, ip: 'stdio' }), null, 100);
    expect(outcome(await shorten(on.h, { keyId: null, ip: 'stdio', transport: 'stdio' }, 2))).toStrictEqual({ ok: 2, limited: 0 });
  });
});
