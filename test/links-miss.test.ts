/**
 * Issue 32: a redirect of a code not cached is served ahead of the router too (the store read
 * in the shortener's preroute), and unknown codes are remembered for UNKNOWN_TTL_MS — on the
 * file store and across 3 Redis instances, where a code created on one instance redirects on
 * the others within the stated bound.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LINKS, type LinkRecord } from '../src/tools/shortener/links.js';
import { clicksStored } from './links-clicks.js';
import { visitAnalytics } from '../src/tools/shortener/analytics.js';
import { linkTraffic, STALE_BOUND_MS, UNKNOWN_MAX, UNKNOWN_TTL_MS } from '../src/tools/shortener/traffic.js';
import { closeAfterEach, listenTestApp, type ListeningApp } from './harness.js';
import { rawConnection } from './raw-http.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const closing = closeAfterEach();

function link(code: string, url: string, extra: Partial<LinkRecord> = {}): LinkRecord {
  const createdAt = new Date().toISOString();
  return { code, url, createdAt, creator: 'key:k1', creatorKeyId: 'k1', creatorDay: `key:k1|${createdAt.slice(0, 10)}`, ...extra };
}

async function visit(node: ListeningApp, code: string): Promise<Response> {
  const r = await fetch(`${node.url}/s/${code}`, { redirect: 'manual' });
  await r.arrayBuffer();
  return r;
}

/**
 * GETs of `paths` written at once on one connection (HTTP/1.1 pipelining: the server reads them
 * in one turn), the last closing it: each answer's status and Location, in order.
 */
async function pipelined(base: string, paths: readonly string[]): Promise<[number, string | null][]> {
  const { host, port } = new URL(base);
  const conn = rawConnection(Number(port));
  conn.send(paths.map((p, i) => `GET ${p} HTTP/1.1\r\nHost: ${host}\r\n${i === paths.length - 1 ? 'Connection: close\r\n' : ''}\r\n`).join(''));
  return (await conn.answers).map((a) => [a.status, a.headers['location'] ?? null]);
}

function headerNames(h: Headers): string[] {
  const out: string[] = [];
  h.forEach((_v, k) => out.push(k));
  return out.sort();
}

function missSuite(env: () => Record<string, string>): void {
  const node = async () => closing(await listenTestApp({ env: env() }));

  it('a stored link not cached yet redirects ahead of the router, counted once, with the headers the route sends', async () => {
    const n = await node();
    const links = n.services.store.collection(LINKS);
    // Written straight into the store (as by another instance, or before a restart): not cached.
    await links.put(link('cold-1', 'https://example.com/cold/€'));
    await links.put(link('cold-2', 'https://example.com/cold/€'));
    const traffic = linkTraffic(n.services);
    expect(traffic.cached('cold-1')).toBeUndefined();
    const get = vi.spyOn(links, 'getMany'); // the redirect reads links not cached together, one getMany a turn
    const first = await visit(n, 'cold-1');
    expect(first.status).toBe(302);
    expect(first.headers.get('location')).toBe('https://example.com/cold/%E2%82%AC');
    expect(get).toHaveBeenCalledTimes(1); // one read: the router did not read it again
    expect(traffic.url('cold-1')).toBe('https://example.com/cold/€');
    // The route's own answer for a cold code (a query string: the preroute declines) has the same headers.
    const routed = await fetch(`${n.url}/s/cold-2?utm=x`, { redirect: 'manual' });
    expect(routed.status).toBe(302);
    expect(routed.headers.get('location')).toBe(first.headers.get('location'));
    expect(headerNames(first.headers)).toStrictEqual(headerNames(routed.headers));
    const again = await visit(n, 'cold-1');
    expect(again.status).toBe(302);
    expect(get).toHaveBeenCalledTimes(2); // cold-2 through the route; cold-1's second visit is a cache hit
    await traffic.flush();
    expect(await clicksStored(n.services.store, ['cold-1'])).toStrictEqual([2]);
  });

  it('a link with rules read cold is left to the route: maxVisits exact, expiry kept', async () => {
    const n = await node();
    const links = n.services.store.collection(LINKS);
    await links.put(link('rule-1', 'https://example.com/r', { maxVisits: 2, expiredUrl: 'https://example.com/used' }));
    await links.put(link('rule-2', 'https://example.com/r2', { expiresAt: new Date(Date.now() - 1000).toISOString() }));
    const seen = [];
    for (let i = 0; i < 4; i++) {
      const r = await visit(n, 'rule-1');
      seen.push([r.status, r.headers.get('location')]);
    }
    expect(seen).toStrictEqual([
      [302, 'https://example.com/r'],
      [302, 'https://example.com/r'],
      [302, 'https://example.com/used'],
      [302, 'https://example.com/used'],
    ]);
    const gone = await fetch(`${n.url}/s/rule-2`, { redirect: 'manual' });
    expect(gone.status).toBe(410);
    expect(await gone.text()).toContain('This short link has expired');
  });

  it('an unknown code is 404 in the contract shape, read from the store once per UNKNOWN_TTL_MS; created here, it redirects at once', async () => {
    const n = await node();
    const links = n.services.store.collection(LINKS);
    const get = vi.spyOn(links, 'getMany'); // the redirect reads links not cached together, one getMany a turn
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${n.url}/s/none-1`, { redirect: 'manual' });
      expect(r.status).toBe(404);
      expect(((await r.json()) as { success: boolean; error: { code: string } }).error.code).toBe('NOT_FOUND');
    }
    expect(get).toHaveBeenCalledTimes(1);
    expect(linkTraffic(n.services).unknownCodes).toBe(1);
    const created = await fetch(`${n.url}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/late', code: 'none-1' }) });
    expect(created.status).toBe(201);
    const r = await visit(n, 'none-1');
    expect([r.status, r.headers.get('location')]).toStrictEqual([302, 'https://example.com/late']);
    // A code the memory holds is read again once its time is up.
    await fetch(`${n.url}/s/none-2`, { redirect: 'manual' });
    const reads = get.mock.calls.length;
    await new Promise((res) => setTimeout(res, UNKNOWN_TTL_MS + 50));
    expect((await visit(n, 'none-2')).status).toBe(404);
    expect(get.mock.calls.length).toBe(reads + 1);
  });

  it('cold visits arriving together (pipelined on two connections): each answers its own link or 404, the links read together, every click counted once', async () => {
    const n = await node();
    const links = n.services.store.collection(LINKS);
    for (let i = 0; i < 60; i++) await links.put(link(`many-${i}`, `https://example.com/many/${i}`));
    const getMany = vi.spyOn(links, 'getMany');
    // 60 stored codes not cached, each visited twice, and 20 unknown codes: one write per connection.
    const stored = Array.from({ length: 60 }, (_, i) => `many-${i}`);
    const codes = [...stored, ...Array.from({ length: 20 }, (_, i) => `none-${i}`), ...stored];
    const halves = [codes.filter((_, i) => i % 2 === 0), codes.filter((_, i) => i % 2 === 1)];
    const answers = await Promise.all(halves.map((h) => pipelined(n.url, h.map((c) => `/s/${c}`))));
    halves.forEach((h, k) => expect(answers[k]).toStrictEqual(h.map((c) => (c.startsWith('none-') ? [404, null] : [302, `https://example.com/many/${c.slice(5)}`]))));
    // Read together: a call took many codes, and no code was read more than once per connection.
    const calls = getMany.mock.calls.map((c) => c[0]);
    expect(Math.max(...calls.map((c) => c.length))).toBeGreaterThan(1);
    for (const c of new Set(codes)) expect(calls.flat().filter((r) => r === c).length).toBeLessThanOrEqual(2);
    // Written (the file store's analytics thread writes its batches every 10 s: docs/shortener.md, "The visit log").
    await visitAnalytics(n.services).flush();
    expect(await clicksStored(n.services.store, stored)).toStrictEqual(stored.map(() => 2));
  });

  it('the unknown-code memory is bounded (a scan of random codes cannot grow it)', async () => {
    const n = await node();
    const traffic = linkTraffic(n.services);
    const codes = Array.from({ length: UNKNOWN_MAX + 50 }, (_, i) => `scan${i}`);
    for (let i = 0; i < codes.length; i += 500) await Promise.all(codes.slice(i, i + 500).map((c) => traffic.load(c)));
    expect(traffic.unknownCodes).toBe(UNKNOWN_MAX);
  });
}

describe('cold redirects and unknown codes, file store', () => {
  missSuite(() => ({}));
});

let redis: TestRedis | undefined;
afterAll(async () => {
  await redis?.stop();
});

describeRedis('cold redirects and unknown codes, Redis', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  missSuite(() => ({ REDIS_URL: redis!.url, REDIS_PREFIX: redis!.prefix() }));

  it('a code seen unknown on 3 instances and then created on one redirects on every instance within UNKNOWN_TTL_MS (≤ the stated bound)', async () => {
    expect(UNKNOWN_TTL_MS).toBeLessThan(STALE_BOUND_MS);
    const prefix = redis!.prefix();
    const nodes: ListeningApp[] = [];
    for (let i = 0; i < 3; i++) nodes.push(closing(await listenTestApp({ env: { REDIS_URL: redis!.url, REDIS_PREFIX: prefix } })));
    for (const n of nodes) expect((await visit(n, 'later-3')).status).toBe(404);
    for (const n of nodes) expect(linkTraffic(n.services).unknownCodes).toBe(1);
    const created = await fetch(`${nodes[0]!.url}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/later', code: 'later-3' }) });
    expect(created.status).toBe(201);
    const at = performance.now();
    expect((await visit(nodes[0]!, 'later-3')).headers.get('location')).toBe('https://example.com/later');
    // The others: once the memory's time is up (measured from before the create answered).
    await new Promise((res) => setTimeout(res, Math.max(0, UNKNOWN_TTL_MS + 20 - (performance.now() - at))));
    for (const n of nodes) expect((await visit(n, 'later-3')).headers.get('location')).toBe('https://example.com/later');
  });
});
