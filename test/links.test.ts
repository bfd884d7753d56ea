/**
 * Issue 32: short links their owner manages (list, update, delete, expiry, visit limits), over
 * real HTTP and MCP, on the file store and on a real Redis (3 instances for the cluster-wide
 * promises: maxVisits exact, caches following updates and deletes).
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { manualClock, type ManualClock } from '../src/core/clock.js';
import { transferCommand } from '../src/state/transfer-cli.js';
import { families } from '../src/tools/index.js';
import { deferred } from '../src/lib/deferred.js';
import { LINK_TOMBSTONES, LINK_VISITS, LINKS, linkCodes } from '../src/tools/shortener/links.js';
import { CHANGE_POLL_MS, linkTraffic } from '../src/tools/shortener/traffic.js';
import { closeAfterEach, listenTestApp, mcpError, tempDir, testConfig, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { jsonWithoutRequestId } from './request-ids.js';

const closing = closeAfterEach();
const T0 = Date.parse('2026-11-22T09:00:00.000Z');

type Json = Record<string, unknown>;

async function call(node: ListeningApp, method: string, p: string, body?: unknown, key?: string): Promise<Response> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers.authorization = `Bearer ${key}`;
  return fetch(node.url + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
}

async function json(r: Response | Promise<Response>): Promise<Json> {
  return (await (await r).json()) as Json;
}

async function register(node: ListeningApp, email: string): Promise<string> {
  const r = await call(node, 'POST', '/api/auth/register', { email });
  expect(r.status).toBe(201);
  return ((await jsonWithoutRequestId(r)) as { api_key: string }).api_key;
}

/** The status and Location of a visit. */
async function visit(node: ListeningApp, code: string, method = 'GET'): Promise<[number, string | null]> {
  const r = await call(node, method, `/s/${code}`);
  await r.arrayBuffer();
  return [r.status, r.headers.get('location')];
}

/** The suite, on the store `env()` names (the file store: {}; Redis: its URL and a fresh prefix). */
function linkSuite(env: () => Record<string, string>): void {
  async function node(clock?: ManualClock): Promise<ListeningApp> {
    return closing(await listenTestApp({ env: env(), overrides: clock ? { clock } : {} }));
  }

  it('ownership: a key sees and changes only its own links; any other code is 404; keyless links cannot be managed', async () => {
    const n = await node();
    const [alice, bob] = [await register(n, 'alice@example.com'), await register(n, 'bob@example.com')];
    const created = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'alice-1', title: 'A' }, alice);
    expect(created.status).toBe(201);
    const body = await json(created);
    expect(body).toMatchObject({ code: 'alice-1', managed: true, title: 'A' });
    expect('note' in body).toBe(false);
    const notFound = { success: false, error: { code: 'NOT_FOUND', message: 'No short link with code "alice-1"', details: { code: 'alice-1' } } };
    for (const [method, p, body] of [
      ['GET', '/api/shorten?code=alice-1', undefined],
      ['PATCH', '/api/links/alice-1', { url: 'https://evil.example/' }],
      ['DELETE', '/api/links/alice-1', undefined],
    ] as const) {
      const r = await call(n, method, p, body, bob);
      expect([method, r.status, await jsonWithoutRequestId(r)]).toStrictEqual([method, 404, notFound]);
    }
    expect(await json(call(n, 'GET', '/api/links', undefined, bob))).toStrictEqual({ success: true, links: [], nextCursor: null });
    expect(await visit(n, 'alice-1')).toStrictEqual([302, 'https://example.com/a']); // bob's tries changed nothing

    const keyless = await json(call(n, 'POST', '/api/shorten', { url: 'https://example.com/k', code: 'nobodys' }));
    expect(keyless).toMatchObject({ managed: false, note: 'Created without an API key: this link belongs to nobody and cannot be listed, updated or deleted.' });
    for (const [method, p] of [
      ['GET', '/api/links'],
      ['DELETE', '/api/links/nobodys'],
    ] as const) {
      const r = await call(n, method, p);
      expect([p, r.status, ((await jsonWithoutRequestId(r)) as { error: { code: string } }).error.code]).toStrictEqual([p, 401, 'UNAUTHORIZED']);
    }
    // A key cannot take over a keyless link either.
    expect((await call(n, 'DELETE', '/api/links/nobodys', undefined, alice)).status).toBe(404);
    const r = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/k', externalId: 'x' });
    expect([r.status, ((await jsonWithoutRequestId(r)) as { error: { code: string } }).error.code]).toStrictEqual([400, 'INVALID_INPUT']);
  });

  it('idempotent create: the same externalId answers the existing link with 200, exactly one of 20 concurrent creates makes it', async () => {
    const n = await node();
    const [alice, bob] = [await register(n, 'alice@example.com'), await register(n, 'bob@example.com')];
    const first = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/1', externalId: 'order-1' }, alice);
    expect(first.status).toBe(201);
    const one = await json(first);
    const again = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/other', externalId: 'order-1' }, alice);
    expect(again.status).toBe(200);
    expect(await json(again)).toStrictEqual({ ...one, existing: true });
    // Unique per owner: bob's order-1 is another link.
    const bobs = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/1', externalId: 'order-1' }, bob);
    expect(bobs.status).toBe(201);
    expect((await json(bobs)).code).not.toBe(one.code);

    const rs = await Promise.all(Array.from({ length: 20 }, (_, i) => call(n, 'POST', '/api/shorten', { url: `https://example.com/c${i}`, externalId: 'burst' }, alice)));
    const bodies = await Promise.all(rs.map((r) => r.json() as Promise<Json>));
    expect(rs.map((r) => r.status).sort()).toStrictEqual([...Array(19).fill(200), 201]);
    expect(new Set(bodies.map((b) => b.code)).size).toBe(1);
    const listed = await json(call(n, 'GET', '/api/links?search=example.com/c', undefined, alice));
    expect((listed.links as Json[]).length).toBe(1);
  });

  it('url_list: newest first, limit and an opaque cursor, tag / search / createdAfter / createdBefore, clicks per item', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'lister@example.com');
    const codes: string[] = [];
    for (let i = 0; i < 7; i++) {
      clock.t = T0 + i * 60_000;
      const tags = i % 2 === 0 ? ['even'] : ['odd'];
      const r = await json(call(n, 'POST', '/api/shorten', { url: `https://example.com/p${i}`, code: `list-${i}`, tags, title: i === 3 ? 'The Third' : undefined }, key));
      codes.push(r.code as string);
    }
    clock.t = T0 + 3_600_000;
    await visit(n, 'list-5');
    await visit(n, 'list-5');
    const all = await json(call(n, 'GET', '/api/links?limit=100', undefined, key));
    expect((all.links as Json[]).map((l) => l.code)).toStrictEqual([...codes].reverse());
    expect(all.nextCursor).toBe(null);
    expect((all.links as Json[])[1]).toStrictEqual({
      code: 'list-5',
      shortUrl: 'http://short.test/s/list-5',
      url: 'https://example.com/p5',
      createdAt: new Date(T0 + 5 * 60_000).toISOString(),
      clicks: 2,
      lastClickedAt: new Date(T0 + 3_600_000).toISOString(),
      tags: ['odd'],
    });
    // Pages of 3 walk the same order, then stop.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Json = await json(call(n, 'GET', `/api/links?limit=3${cursor ? `&cursor=${cursor}` : ''}`, undefined, key));
      seen.push(...(page.links as Json[]).map((l) => l.code as string));
      cursor = page.nextCursor as string | null;
    } while (cursor !== null);
    expect(seen).toStrictEqual([...codes].reverse());
    const codesOf = async (q: string) => ((await json(call(n, 'GET', `/api/links?${q}`, undefined, key))).links as Json[]).map((l) => l.code);
    expect(await codesOf('tag=even')).toStrictEqual(['list-6', 'list-4', 'list-2', 'list-0']);
    expect(await codesOf('tag=even&limit=2')).toStrictEqual(['list-6', 'list-4']);
    expect(await codesOf('search=third')).toStrictEqual(['list-3']);
    expect(await codesOf('search=p6')).toStrictEqual(['list-6']);
    expect(await codesOf(`createdAfter=${new Date(T0 + 4 * 60_000).toISOString()}`)).toStrictEqual(['list-6', 'list-5']);
    expect(await codesOf(`createdBefore=${new Date(T0 + 2 * 60_000).toISOString()}`)).toStrictEqual(['list-1', 'list-0']);
    // Another key's cursor is refused, as is a made-up one; limits outside 1-100 are 400.
    const other = await register(n, 'other@example.com');
    const page = await json(call(n, 'GET', '/api/links?limit=1', undefined, key));
    for (const [q, k] of [
      [`cursor=${page.nextCursor as string}`, other],
      ['cursor=bm90LWEtY3Vyc29y', key],
      ['limit=0', key],
      ['limit=101', key],
    ] as const) {
      expect([q, (await call(n, 'GET', `/api/links?${q}`, undefined, k)).status]).toStrictEqual([q, 400]);
    }
  });

  it('url_list: a createdAfter past year 9999 lists nothing and a createdBefore past it bounds nothing; before year 0000 the reverse', async () => {
    const n = await node();
    const key = await register(n, 'far@example.com');
    for (const code of ['far-1', 'far-2']) expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/f', code }, key)).status).toBe(201);
    const listed = async (q: string) => json(call(n, 'GET', `/api/links?${q}`, undefined, key));
    const all = { success: true, links: [expect.objectContaining({ code: 'far-2' }), expect.objectContaining({ code: 'far-1' })], nextCursor: null };
    const none = { success: true, links: [], nextCursor: null };
    // 9999-12-31T23:59:59-01:00 is 10000-01-01T00:59:59Z, whose ISO form '+010000-…' sorted below every link.
    const late = encodeURIComponent('9999-12-31T23:59:59-01:00');
    const early = encodeURIComponent('0000-01-01T00:00:00+01:00');
    expect(await listed(`createdAfter=${late}`)).toStrictEqual(none);
    expect(await listed(`createdBefore=${late}`)).toStrictEqual(all);
    expect(await listed(`createdAfter=${early}`)).toStrictEqual(all);
    expect(await listed(`createdBefore=${early}`)).toStrictEqual(none);
    expect(await listed(`createdAfter=${early}&createdBefore=${late}`)).toStrictEqual(all);
    expect(await listed('createdAfter=9999-12-31T23:59:59.999Z')).toStrictEqual(none);
    expect(await listed('createdBefore=9999-12-31T23:59:59.999Z')).toStrictEqual(all);
  });

  it('url_update: a new URL redirects at once, null clears, a past expiresAt or a bad URL is 400 and changes nothing', async () => {
    const n = await node();
    const key = await register(n, 'upd@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/old', code: 'upd-1', title: 'T', tags: ['a', 'b'], maxVisits: 5 }, key);
    expect(await visit(n, 'upd-1')).toStrictEqual([302, 'https://example.com/old']);
    const r = await call(n, 'PATCH', '/api/links/upd-1', { url: 'https://example.com/new', title: null, tags: ['c'], maxVisits: null }, key);
    expect(r.status).toBe(200);
    expect(await jsonWithoutRequestId(r)).toStrictEqual({
      success: true,
      code: 'upd-1',
      shortUrl: 'http://short.test/s/upd-1',
      url: 'https://example.com/new',
      createdAt: expect.any(String),
      clicks: 1,
      lastClickedAt: expect.any(String),
      tags: ['c'],
    });
    expect(await visit(n, 'upd-1')).toStrictEqual([302, 'https://example.com/new']);
    for (const body of [{ expiresAt: '2001-01-01T00:00:00Z' }, { url: 'javascript:alert(1)' }, { expiredUrl: 'ftp://x/' }, { maxVisits: 0 }, { tags: ['x'.repeat(31)] }]) {
      const bad = await call(n, 'PATCH', '/api/links/upd-1', body, key);
      expect([body, bad.status]).toStrictEqual([body, 400]);
    }
    expect(await visit(n, 'upd-1')).toStrictEqual([302, 'https://example.com/new']);
  });

  it('a link stored before the owner index is not listed until its owner updates it', async () => {
    const n = await node();
    const key = await register(n, 'legacy@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/probe', code: 'probe-1' }, key);
    const keyId = (await n.services.store.collection(LINKS).get('probe-1'))?.creatorKeyId;
    expect(typeof keyId).toBe('string');
    expect((await call(n, 'DELETE', '/api/links/probe-1', undefined, key)).status).toBe(200);
    const createdAt = '2026-01-01T00:00:00.000Z';
    await n.services.store.collection(LINKS).put({ code: 'legacy-1', url: 'https://example.com/l', createdAt, creator: `key:${keyId!}`, creatorKeyId: keyId!, creatorDay: `key:${keyId!}|2026-01-01` });
    expect(await json(call(n, 'GET', '/api/links', undefined, key))).toStrictEqual({ success: true, links: [], nextCursor: null });
    expect((await call(n, 'PATCH', '/api/links/legacy-1', { title: 'Old one' }, key)).status).toBe(200);
    expect(((await json(call(n, 'GET', '/api/links', undefined, key))).links as Json[]).map((l) => [l.code, l.title])).toStrictEqual([['legacy-1', 'Old one']]);
  });

  it('url_delete: the link and its clicks are gone; generated codes skip the code; its owner may claim it again, no one else', async () => {
    const n = await node();
    const [alice, bob] = [await register(n, 'del@example.com'), await register(n, 'del2@example.com')];
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/d', code: 'Gone123', externalId: 'e1' }, alice);
    await visit(n, 'Gone123');
    expect(await json(call(n, 'DELETE', '/api/links/Gone123', undefined, alice))).toStrictEqual({ success: true, deleted: true, code: 'Gone123' });
    expect((await visit(n, 'Gone123'))[0]).toBe(404);
    expect((await call(n, 'GET', '/api/shorten?code=Gone123', undefined, alice)).status).toBe(404);
    expect((await call(n, 'DELETE', '/api/links/Gone123', undefined, alice)).status).toBe(404);
    // A generated code that hits the deleted one draws again.
    const gen = vi.spyOn(linkCodes, 'generate').mockReturnValueOnce('Gone123').mockReturnValueOnce('Fresh12');
    try {
      expect((await json(call(n, 'POST', '/api/shorten', { url: 'https://example.com/n' }, bob))).code).toBe('Fresh12');
    } finally {
      gen.mockRestore();
    }
    const stolen = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/x', code: 'Gone123' }, bob);
    expect(stolen.status).toBe(409);
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/x', code: 'Gone123' })).status).toBe(409);
    // The externalId was freed with the link; the owner claims the code again, from zero clicks.
    const again = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/back', code: 'Gone123', externalId: 'e1' }, alice);
    expect(again.status).toBe(201);
    expect(await json(call(n, 'GET', '/api/shorten?code=Gone123', undefined, alice))).toMatchObject({ clicks: 0, url: 'https://example.com/back' });
  });

  it('a tombstone rests 30 days: then generated codes may take the code again', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'tomb@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/t', code: 'Tomb123' }, key);
    expect((await call(n, 'DELETE', '/api/links/Tomb123', undefined, key)).status).toBe(200);
    const draw = () => vi.spyOn(linkCodes, 'generate').mockReturnValueOnce('Tomb123').mockReturnValueOnce('Else123').mockReturnValueOnce('Else456');
    let gen = draw();
    try {
      clock.t = T0 + 30 * 86_400_000 - 1;
      expect((await json(call(n, 'POST', '/api/shorten', { url: 'https://example.com/n' }, key))).code).toBe('Else123');
    } finally {
      gen.mockRestore();
    }
    gen = draw();
    try {
      clock.t = T0 + 30 * 86_400_000;
      expect((await json(call(n, 'POST', '/api/shorten', { url: 'https://example.com/n' }, key))).code).toBe('Tomb123');
    } finally {
      gen.mockRestore();
    }
  });

  it('expiry: before expiresAt a redirect, after it 302 to expiredUrl or 410 with a small HTML page; HEAD alike, counting nothing', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const key = await register(n, 'exp@example.com');
    const at = new Date(T0 + 60_000).toISOString();
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/live', code: 'exp-1', expiresAt: at, expiredUrl: 'https://example.com/over' }, key);
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/live', code: 'exp-2', expiresAt: at }, key);
    expect(await visit(n, 'exp-1')).toStrictEqual([302, 'https://example.com/live']);
    expect(await visit(n, 'exp-2', 'HEAD')).toStrictEqual([302, 'https://example.com/live']);
    clock.t = T0 + 60_000;
    expect(await visit(n, 'exp-1')).toStrictEqual([302, 'https://example.com/over']);
    expect(await visit(n, 'exp-1', 'HEAD')).toStrictEqual([302, 'https://example.com/over']);
    const gone = await call(n, 'GET', '/s/exp-2');
    expect([gone.status, gone.headers.get('content-type')]).toStrictEqual([410, 'text/html; charset=utf-8']);
    expect(await gone.text()).toContain('This short link has expired');
    expect(await json(call(n, 'GET', '/api/shorten?code=exp-1', undefined, key))).toMatchObject({ clicks: 1 });
    const past = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/', expiresAt: at }, key);
    expect(past.status).toBe(400);
    // Extending the expiry brings the link back.
    expect((await call(n, 'PATCH', '/api/links/exp-2', { expiresAt: null }, key)).status).toBe(200);
    expect(await visit(n, 'exp-2')).toStrictEqual([302, 'https://example.com/live']);
  });

  it('maxVisits: exactly that many redirects under 50 concurrent visits; HEAD counts nothing', async () => {
    const n = await node();
    const key = await register(n, 'max@example.com');
    await call(n, 'POST', '/api/shorten', { url: 'https://example.com/m', code: 'max-1', maxVisits: 10, expiredUrl: 'https://example.com/sold-out' }, key);
    for (let i = 0; i < 5; i++) expect(await visit(n, 'max-1', 'HEAD')).toStrictEqual([302, 'https://example.com/m']);
    const out = await Promise.all(Array.from({ length: 50 }, () => visit(n, 'max-1')));
    expect(out.filter(([, l]) => l === 'https://example.com/m').length).toBe(10);
    expect(out.filter(([, l]) => l === 'https://example.com/sold-out').length).toBe(40);
    await expect.poll(async () => (await json(call(n, 'GET', '/api/shorten?code=max-1', undefined, key))).clicks).toBe(10);
  });

  it('maxVisits: a refused visit is not counted, so raising the limit reopens a used-up link', async () => {
    const n = await node();
    const key = await register(n, 'reopen@example.com');
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/mv', code: 'mv1', maxVisits: 1 }, key)).status).toBe(201);
    expect(await visit(n, 'mv1')).toStrictEqual([302, 'https://example.com/mv']);
    expect(await visit(n, 'mv1')).toStrictEqual([410, null]);
    expect(await visit(n, 'mv1')).toStrictEqual([410, null]);
    expect((await call(n, 'PATCH', '/api/links/mv1', { maxVisits: 2 }, key)).status).toBe(200);
    expect(await visit(n, 'mv1')).toStrictEqual([302, 'https://example.com/mv']);
    expect(await visit(n, 'mv1')).toStrictEqual([410, null]);
    // The count is the redirects served, whatever was refused.
    expect(await n.services.store.collection(LINK_VISITS).get('mv1')).toStrictEqual({ code: 'mv1', visits: 2 });
  });

  it('maxVisits set on a link that had no limit counts from 0; changed from one number to another it keeps the count', async () => {
    const n = await node();
    const key = await register(n, 'limit-later@example.com');
    const url = 'https://example.com/ll';
    const patch = async (maxVisits: number | null) => expect((await call(n, 'PATCH', '/api/links/ll-1', { maxVisits }, key)).status).toBe(200);
    const visits = async (k: number) => Promise.all(Array.from({ length: k }, () => visit(n, 'll-1')));
    expect((await call(n, 'POST', '/api/shorten', { url, code: 'll-1' }, key)).status).toBe(201);
    expect(await visits(3)).toStrictEqual(Array(3).fill([302, url]));
    await patch(2);
    expect([...(await visits(2)), await visit(n, 'll-1')]).toStrictEqual([[302, url], [302, url], [410, null]]);
    // Cleared, then set again: the 2 served under the old limit do not count against the new one.
    await patch(null);
    expect(await visit(n, 'll-1')).toStrictEqual([302, url]);
    await patch(2);
    expect([...(await visits(2)), await visit(n, 'll-1')]).toStrictEqual([[302, url], [302, url], [410, null]]);
    // 2 → 3: the 2 served still count.
    await patch(3);
    expect([await visit(n, 'll-1'), await visit(n, 'll-1')]).toStrictEqual([[302, url], [410, null]]);
  });

  it('url_delete writes the tombstone before it removes the link: another key’s custom create of the code in between is a 409', async () => {
    const n = await node();
    const [alice, bob] = [await register(n, 'race-del-a@example.com'), await register(n, 'race-del-b@example.com')];
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'race-del' }, alice)).status).toBe(201);
    const links = n.services.store.collection(LINKS);
    const update = links.update.bind(links);
    const [removed, release] = [deferred<void>(), deferred<void>()];
    // The delete's removal of the link, held once done.
    const held = vi.spyOn(links, 'update').mockImplementationOnce(async (id, fn, opts) => {
      const r = await update(id, fn, opts);
      removed.resolve();
      await release.promise;
      return r;
    });
    try {
      const deleting = call(n, 'DELETE', '/api/links/race-del', undefined, alice);
      await removed.promise;
      const stolen = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/b', code: 'race-del' }, bob);
      release.resolve();
      expect(stolen.status).toBe(409);
      expect((await deleting).status).toBe(200);
    } finally {
      release.resolve();
      held.mockRestore();
    }
    expect((await visit(n, 'race-del'))[0]).toBe(404);
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a2', code: 'race-del' }, alice)).status).toBe(201);
  });

  it('a refused url_delete writes no tombstone: another key cannot hold a free code or one it does not own', async () => {
    const n = await node();
    const [alice, bob] = [await register(n, 'squat-a@example.com'), await register(n, 'squat-b@example.com')];
    const tombstones = n.services.store.collection(LINK_TOMBSTONES);
    expect((await call(n, 'DELETE', '/api/links/squat-1', undefined, bob)).status).toBe(404);
    expect(await tombstones.get('squat-1')).toBeUndefined();
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'squat-1' }, alice)).status).toBe(201);
    expect((await call(n, 'DELETE', '/api/links/squat-1', undefined, bob)).status).toBe(404);
    expect(await tombstones.get('squat-1')).toBeUndefined();
    expect(await visit(n, 'squat-1')).toStrictEqual([302, 'https://example.com/a']);
    // Deleted by its owner, the code is the owner's to claim again, not bob's.
    expect((await call(n, 'DELETE', '/api/links/squat-1', undefined, alice)).status).toBe(200);
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/b', code: 'squat-1' }, bob)).status).toBe(409);
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a2', code: 'squat-1' }, alice)).status).toBe(201);
  });

  it('a custom create that meets a delete of the code between its tombstone check and its insert takes its link back: 409, the code stays its former owner’s', async () => {
    const n = await node();
    const [alice, bob] = [await register(n, 'race-cr-a@example.com'), await register(n, 'race-cr-b@example.com')];
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'race-cr' }, alice)).status).toBe(201);
    const { store } = n.services;
    const aliceId = (await store.collection(LINKS).get('race-cr'))!.creatorKeyId;
    const tombstones = store.collection(LINK_TOMBSTONES);
    const get = tombstones.get.bind(tombstones);
    // Bob's check finds no tombstone; alice's whole delete runs before his insert.
    const check = vi.spyOn(tombstones, 'get').mockImplementationOnce(async (id) => {
      const t = await get(id);
      expect((await call(n, 'DELETE', '/api/links/race-cr', undefined, alice)).status).toBe(200);
      return t;
    });
    try {
      const r = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/b', code: 'race-cr' }, bob);
      expect([r.status, await jsonWithoutRequestId(r)]).toStrictEqual([409, { success: false, error: { code: 'CONFLICT', message: 'The short code "race-cr" is already taken', details: { code: 'race-cr' } } }]);
    } finally {
      check.mockRestore();
    }
    expect(await store.collection(LINKS).get('race-cr')).toBeUndefined();
    expect((await visit(n, 'race-cr'))[0]).toBe(404);
    expect((await tombstones.get('race-cr'))?.ownerKeyId).toBe(aliceId);
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a2', code: 'race-cr' }, alice)).status).toBe(201);
  });

  it('a reclaim removes only the tombstone it read: the owner’s delete of the new link, racing the reclaim, keeps its tombstone', async () => {
    const clock = manualClock(T0);
    const n = await node(clock);
    const [alice, bob] = [await register(n, 'race-rc-a@example.com'), await register(n, 'race-rc-b@example.com')];
    const { store } = n.services;
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a', code: 'race-rc' }, alice)).status).toBe(201);
    const aliceId = (await store.collection(LINKS).get('race-rc'))!.creatorKeyId;
    expect((await call(n, 'DELETE', '/api/links/race-rc', undefined, alice)).status).toBe(200);
    clock.t = T0 + 1000;
    const links = store.collection(LINKS);
    const insert = links.insert.bind(links);
    let raced = false;
    // The reclaim's insert done, alice deletes the new link before the reclaim removes the old tombstone.
    const hook = vi.spyOn(links, 'insert').mockImplementationOnce(async (r, opts) => {
      const ok = await insert(r, opts);
      expect((await call(n, 'DELETE', '/api/links/race-rc', undefined, alice)).status).toBe(200);
      raced = true;
      return ok;
    });
    try {
      expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/a2', code: 'race-rc' }, alice)).status).toBe(201);
    } finally {
      hook.mockRestore();
    }
    expect(raced).toBe(true);
    expect(await store.collection(LINK_TOMBSTONES).get('race-rc')).toStrictEqual({ code: 'race-rc', deletedAt: new Date(T0 + 1000).toISOString(), ownerKeyId: aliceId });
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/b', code: 'race-rc' }, bob)).status).toBe(409);
  });

  it('the instance that updates a link does not cache the old record from a read of it under way', async () => {
    const n = await node();
    const key = await register(n, 'stale@example.com');
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/v1', code: 'stale-1' }, key)).status).toBe(201);
    const traffic = linkTraffic(n.services);
    await traffic.sync();
    // The change log is read again after this test (every CHANGE_POLL_MS): the window the bug lived in.
    const noPoll = vi.spyOn(traffic, 'sync').mockResolvedValue();
    const links = n.services.store.collection(LINKS);
    const getMany = links.getMany.bind(links);
    const [reading, release] = [deferred<void>(), deferred<void>()];
    const held = vi.spyOn(links, 'getMany').mockImplementationOnce(async (ids) => {
      const r = await getMany(ids);
      reading.resolve();
      await release.promise;
      return r;
    });
    try {
      const cold = visit(n, 'stale-1');
      await reading.promise;
      expect((await call(n, 'PATCH', '/api/links/stale-1', { url: 'https://example.com/v2' }, key)).status).toBe(200);
      release.resolve();
      expect(await cold).toStrictEqual([302, 'https://example.com/v1']); // read before the change
      expect(traffic.url('stale-1')).toBeUndefined();
      expect(await visit(n, 'stale-1')).toStrictEqual([302, 'https://example.com/v2']);
    } finally {
      release.resolve();
      held.mockRestore();
      noPoll.mockRestore();
    }
  });

  it('url_shorten_bulk: each link as url_shorten makes it, in order, each with its own outcome; over REST and MCP; a bad shape is a 400 that creates nothing', async () => {
    const n = await node();
    const key = await register(n, 'bulk@example.com');
    expect((await call(n, 'POST', '/api/shorten', { url: 'https://example.com/taken', code: 'bulk-taken' }, key)).status).toBe(201);
    const r = await call(
      n,
      'POST',
      '/api/links/bulk',
      {
        links: [
          { url: 'https://example.com/1', code: 'bulk-1', tags: ['b'], title: 'One' },
          { url: 'https://example.com/2' },
          { url: 'https://example.com/3', code: 'bulk-taken' },
          { url: 'ftp://example.com/4' },
          { url: 'https://example.com/5', externalId: 'ext-5' },
          { url: 'https://example.com/6', externalId: 'ext-5' },
        ],
      },
      key,
    );
    expect(r.status).toBe(200);
    const body = (await r.json()) as { success: boolean; results: Json[]; created: number; existing: number; failed: number; managed: boolean };
    const results = body.results;
    expect(results.map((x) => x.ok)).toStrictEqual([true, true, false, false, true, true]);
    expect(results[0]).toStrictEqual({ ok: true, code: 'bulk-1', shortUrl: `${n.services.config.publicBaseUrl}/s/bulk-1` });
    expect(results[1]!.code).toMatch(/^[A-Za-z0-9]{7}$/);
    expect(results[2]).toStrictEqual({ ok: false, error: { code: 'CONFLICT', message: 'The short code "bulk-taken" is already taken' } });
    // The error url_shorten gives for the same link.
    const single = await json(call(n, 'POST', '/api/shorten', { url: 'ftp://example.com/4' }, key));
    expect(results[3]).toStrictEqual({ ok: false, error: { code: 'INVALID_INPUT', message: (single.error as Json).message } });
    expect(results[5]).toStrictEqual({ ok: true, code: results[4]!.code, shortUrl: results[4]!.shortUrl, existing: true });
    expect([body.success, body.created, body.existing, body.failed, body.managed, 'note' in body]).toStrictEqual([true, 3, 1, 2, true, false]);
    // Made as url_shorten makes them: the owner's, listed with their options, redirecting.
    const listed = await json(call(n, 'GET', '/api/links?limit=100', undefined, key));
    expect((listed.links as Json[]).map((l) => l.code).sort()).toStrictEqual(['bulk-1', 'bulk-taken', results[1]!.code, results[4]!.code].sort());
    expect((listed.links as Json[]).find((l) => l.code === 'bulk-1')).toMatchObject({ url: 'https://example.com/1', tags: ['b'], title: 'One', clicks: 0 });
    expect((listed.links as Json[]).find((l) => l.code === results[4]!.code)).toMatchObject({ url: 'https://example.com/5', externalId: 'ext-5' });
    expect(await visit(n, 'bulk-1')).toStrictEqual([302, 'https://example.com/1']);
    expect(await visit(n, results[1]!.code as string)).toStrictEqual([302, 'https://example.com/2']);

    const client = await n.httpClient({ authorization: `Bearer ${key}` });
    const m = await client.callTool({ name: 'url_shorten_bulk', arguments: { links: [{ url: 'https://example.com/m', code: 'bulk-m' }, { url: 'https://example.com/m2', code: 'bulk-m' }] } });
    expect(m.isError).toBeFalsy();
    expect(m.structuredContent).toMatchObject({ created: 1, existing: 0, failed: 1, managed: true, results: [{ ok: true, code: 'bulk-m' }, { ok: false, error: { code: 'CONFLICT' } }] });

    // A shape the schema refuses: the whole call, before any link is made.
    const many = Array.from({ length: 101 }, (_, i) => ({ url: `https://example.com/many/${i}`, code: `bulk-many-${i}` }));
    for (const bad of [{ links: [] }, { links: many }, { links: [{ url: 'https://example.com/ok', code: 'bulk-ok' }, { url: 'https://example.com/x', code: 'b!' }] }, { links: 'x' }, {}]) {
      const res = await call(n, 'POST', '/api/links/bulk', bad, key);
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toStrictEqual([400, 'INVALID_INPUT']);
    }
    expect((await visit(n, 'bulk-ok'))[0]).toBe(404);
    expect((await visit(n, 'bulk-many-0'))[0]).toBe(404);
  });

  it('url_shorten_bulk counts each link against the daily cap on links and the call once against the call limits; keyless links are nobody’s', async () => {
    const n = closing(await listenTestApp({ env: { ...env(), RATE_LIMITS: 'on', PLAN_KEYLESS: '8/50/3' } }));
    const r = await json(call(n, 'POST', '/api/links/bulk', { links: Array.from({ length: 5 }, (_, i) => ({ url: `https://example.com/k${i}` })) }));
    const results = r.results as Json[];
    expect(results.map((x) => x.ok)).toStrictEqual([true, true, true, false, false]);
    expect([r.managed, r.note]).toStrictEqual([false, 'Created without an API key: this link belongs to nobody and cannot be listed, updated or deleted.']);
    expect(await visit(n, results[0]!.code as string)).toStrictEqual([302, 'https://example.com/k0']);
    const capped = await call(n, 'POST', '/api/shorten', { url: 'https://example.com/k5' });
    const err = ((await capped.json()) as { error: { code: string; message: string } }).error;
    expect(capped.status).toBe(429);
    expect(results[3]).toStrictEqual({ ok: false, error: { code: err.code, message: err.message } });
    expect([r.created, r.failed]).toStrictEqual([3, 2]);
    // One call each against the per-minute limit: the bulk call, the refused url_shorten, this one.
    const last = await call(n, 'POST', '/api/base-convert', { value: '7' });
    expect(last.headers.get('ratelimit-remaining')).toBe('5');
  });

  it('url_list, url_update and url_delete over MCP (the SDK client over streamable HTTP, with the key)', async () => {
    const n = await node();
    const key = await register(n, 'mcp@example.com');
    const client = await n.httpClient({ authorization: `Bearer ${key}` });
    const created = await client.callTool({ name: 'url_shorten', arguments: { url: 'https://example.com/mcp', code: 'mcp-1', tags: ['t'] } });
    expect(created.structuredContent).toMatchObject({ code: 'mcp-1', managed: true, tags: ['t'] });
    const listed = await client.callTool({ name: 'url_list', arguments: { tag: 't' } });
    expect((listed.structuredContent as { links: Json[] }).links.map((l) => l.code)).toStrictEqual(['mcp-1']);
    const updated = await client.callTool({ name: 'url_update', arguments: { code: 'mcp-1', url: 'https://example.com/mcp2' } });
    expect(updated.structuredContent).toMatchObject({ code: 'mcp-1', url: 'https://example.com/mcp2' });
    expect(await visit(n, 'mcp-1')).toStrictEqual([302, 'https://example.com/mcp2']);
    expect((await client.callTool({ name: 'url_delete', arguments: { code: 'mcp-1' } })).structuredContent).toStrictEqual({ deleted: true, code: 'mcp-1' });
    const again = await client.callTool({ name: 'url_delete', arguments: { code: 'mcp-1' } });
    expect(again.isError).toBe(true);
    expect(mcpError(again).code).toBe('NOT_FOUND');
    const anon = await n.httpClient();
    const refused = await anon.callTool({ name: 'url_list', arguments: {} });
    expect([refused.isError, mcpError(refused).code]).toStrictEqual([true, 'UNAUTHORIZED']);
  });

  it('the SDK v2 client (pinned 2026-07-28) manages its links: create, list, update, delete; another key gets 404', async () => {
    const n = await node();
    const [key, other] = [await register(n, 'v2@example.com'), await register(n, 'v2b@example.com')];
    const client = async (k: string) => {
      const c = new ClientV2({ name: 'devtoolbox-tests', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await c.connect(new HttpV2(new URL(`${n.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${k}` } } }));
      return c;
    };
    const [c, o] = [await client(key), await client(other)];
    try {
      const made = await c.callTool({ name: 'url_shorten', arguments: { url: 'https://example.com/v2', code: 'v2-link', externalId: 'v2' } });
      expect(made.structuredContent).toMatchObject({ code: 'v2-link', managed: true, externalId: 'v2' });
      const again = await c.callTool({ name: 'url_shorten', arguments: { url: 'https://example.com/v2', externalId: 'v2' } });
      expect(again.structuredContent).toMatchObject({ code: 'v2-link', existing: true });
      const listed = await c.callTool({ name: 'url_list', arguments: { limit: 5 } });
      expect((listed.structuredContent as { links: Json[] }).links.map((l) => l.code)).toStrictEqual(['v2-link']);
      const stolen = await o.callTool({ name: 'url_update', arguments: { code: 'v2-link', url: 'https://evil.example/' } });
      expect([stolen.isError, mcpError(stolen).code]).toStrictEqual([true, 'NOT_FOUND']);
      const updated = await c.callTool({ name: 'url_update', arguments: { code: 'v2-link', title: 'V2' } });
      expect(updated.structuredContent).toMatchObject({ code: 'v2-link', url: 'https://example.com/v2', title: 'V2' });
      expect((await c.callTool({ name: 'url_delete', arguments: { code: 'v2-link' } })).structuredContent).toStrictEqual({ deleted: true, code: 'v2-link' });
      expect((await visit(n, 'v2-link'))[0]).toBe(404);
    } finally {
      await c.close();
      await o.close();
    }
  });
}

describe('short links people manage, file store', () => {
  linkSuite(() => ({}));
});

let redis: TestRedis | undefined;
afterAll(async () => {
  await redis?.stop();
});

describeRedis('short links people manage, Redis', () => {
  beforeAll(async () => {
    redis = await startRedis();
  });
  linkSuite(() => ({ REDIS_URL: redis!.url, REDIS_PREFIX: redis!.prefix() }));

  async function cluster(): Promise<ListeningApp[]> {
    const prefix = redis!.prefix();
    const nodes: ListeningApp[] = [];
    for (let i = 0; i < 3; i++) nodes.push(closing(await listenTestApp({ env: { REDIS_URL: redis!.url, REDIS_PREFIX: prefix } })));
    return nodes;
  }

  it('maxVisits is exact across 3 instances: 50 concurrent visits spread over them → 10 redirects', async () => {
    const nodes = await cluster();
    const key = await register(nodes[0]!, 'max3@example.com');
    await call(nodes[1]!, 'POST', '/api/shorten', { url: 'https://example.com/m', code: 'max-3', maxVisits: 10 }, key);
    const out = await Promise.all(Array.from({ length: 50 }, (_, i) => visit(nodes[i % 3]!, 'max-3')));
    expect(out.filter(([s]) => s === 302).length).toBe(10);
    expect(out.filter(([s]) => s === 410).length).toBe(40);
  });

  it('caches follow updates and deletes on every instance: after one change-log read (every CHANGE_POLL_MS, or at once on the signal) no instance serves the old URL', async () => {
    const nodes = await cluster();
    const key = await register(nodes[0]!, 'cache@example.com');
    await call(nodes[0]!, 'POST', '/api/shorten', { url: 'https://example.com/v1', code: 'cache-1' }, key);
    for (const n of nodes) expect(await visit(n, 'cache-1')).toStrictEqual([302, 'https://example.com/v1']);
    for (const n of nodes) expect(linkTraffic(n.services).url('cache-1')).toBe('https://example.com/v1'); // cached everywhere
    expect(CHANGE_POLL_MS).toBeLessThanOrEqual(1000);

    expect((await call(nodes[0]!, 'PATCH', '/api/links/cache-1', { url: 'https://example.com/v2' }, key)).status).toBe(200);
    // The poll's read, done now on every instance: the bound is one poll period plus this read.
    for (const n of nodes) await linkTraffic(n.services).sync();
    for (const n of nodes) expect(await visit(n, 'cache-1')).toStrictEqual([302, 'https://example.com/v2']);

    // Without calling sync: the signal (or the poll) drops the entry by itself.
    expect((await call(nodes[2]!, 'DELETE', '/api/links/cache-1', undefined, key)).status).toBe(200);
    for (const n of nodes) await expect.poll(() => linkTraffic(n.services).url('cache-1')).toBeUndefined();
    for (const n of nodes) expect((await visit(n, 'cache-1'))[0]).toBe(404);
  });

  it('export from the file store → import into Redis keeps the links’ options, visits used, externalId claims and owner index', async () => {
    const dir = tempDir();
    const src = await listenTestApp({ env: { DATA_DIR: dir } });
    const key = await register(src, 'move-links@example.com');
    const far = '2099-01-01T00:00:00.000Z';
    const made = { url: 'https://example.com/moved', code: 'moved-1', maxVisits: 2, tags: ['m'], title: 'Moved', externalId: 'mv', expiresAt: far };
    expect((await call(src, 'POST', '/api/shorten', made, key)).status).toBe(201);
    expect(await visit(src, 'moved-1')).toStrictEqual([302, 'https://example.com/moved']);
    await src.close();
    const known = families.flatMap((f) => f.collections ?? []);
    const file = path.join(tempDir(), 'links.jsonl');
    expect(await transferCommand('export', [file], testConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent' }), { known })).toBe(0);
    const env = { REDIS_URL: redis!.url, REDIS_PREFIX: redis!.prefix(), LOG_LEVEL: 'silent' };
    expect(await transferCommand('import', [file], testConfig(env), { known })).toBe(0);
    const n = closing(await listenTestApp({ env }));
    const listed = await json(call(n, 'GET', '/api/links', undefined, key));
    expect(listed.links).toStrictEqual([
      {
        code: 'moved-1',
        shortUrl: 'http://short.test/s/moved-1',
        url: 'https://example.com/moved',
        createdAt: expect.any(String),
        clicks: 1,
        lastClickedAt: expect.any(String),
        expiresAt: far,
        maxVisits: 2,
        tags: ['m'],
        title: 'Moved',
        externalId: 'mv',
      },
    ]);
    const again = await call(n, 'POST', '/api/shorten', made, key);
    expect([again.status, (await json(again)).existing]).toStrictEqual([200, true]);
    expect(await visit(n, 'moved-1')).toStrictEqual([302, 'https://example.com/moved']);
    expect((await visit(n, 'moved-1'))[0]).toBe(410);
  });
});
