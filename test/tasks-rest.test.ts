/**
 * Tasks over REST (docs/tasks.md): `Prefer: respond-async` → 202 + Location, polling, the result
 * (JSON and binary), cancel, ownership, limits counted once, the poll bound.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONVERSIONS } from '../src/tools/media/image-convert.js';
import { startSlowSite, type SlowSite } from './fixtures/slow-site.js';
import { useTestApp, type TestApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const t = useTestApp();
let site: SlowSite;
beforeAll(async () => {
  site = await startSlowSite();
});
afterAll(async () => {
  await site.close();
});

const ASYNC = { prefer: 'respond-async' };

async function poll(app: TestApp, location: string, headers: Record<string, string> = {}, want = 'completed', ms = 8000): Promise<Record<string, unknown>> {
  const end = Date.now() + ms;
  for (;;) {
    const res = await app.request('GET', location, undefined, headers);
    const body = (await jsonWithoutRequestId(res)) as Record<string, unknown>;
    if (body.status === want) return body;
    if (Date.now() > end) throw new Error(`task at ${location}: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('tasks over REST', () => {
  it('Prefer: respond-async on seo_check of a slow site → 202 + Location; polling gives the same JSON the synchronous call gives', async () => {
    const url = `${site.url}/slow.html?ms=700`;
    const res = await t.request('POST', '/api/seo-check', { url, format: 'summary' }, ASYNC);
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    expect(location).toMatch(/^\/api\/tasks\/[0-9a-f-]{36}$/);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('preference-applied')).toBe('respond-async');
    const created = (await jsonWithoutRequestId(res)) as Record<string, unknown>;
    expect(created).toMatchObject({ success: true, status: 'working', tool: 'seo_check', ttlMs: 3_600_000, pollIntervalMs: 1000, location });
    const working = await t.request('GET', location);
    expect(working.status).toBe(200);
    expect(((await jsonWithoutRequestId(working)) as { status: string }).status).toBe('working');
    expect(working.headers.get('retry-after')).toBe('1');

    const done = await poll(t, location);
    const sync = await (await t.request('POST', '/api/seo-check', { url, format: 'summary' })).json();
    expect(done).toMatchObject({ status: 'completed', resultStatus: 200, resultUrl: `${location}/result`, progress: { progress: 3, total: 3, message: 'scored' } });
    expect(done.result).toStrictEqual(sync);
    const result = await t.request('GET', `${location}/result`);
    expect(result.status).toBe(200);
    expect(await jsonWithoutRequestId(result)).toStrictEqual(sync);
  });

  it('GET /api/seo-check?url= with Prefer works the same; without Prefer, or for a fast tool, the answer is synchronous', async () => {
    const url = `${site.url}/slow.html?ms=300`;
    const viaGet = await t.request('GET', `/api/seo-check?url=${encodeURIComponent(url)}`, undefined, ASYNC);
    expect(viaGet.status).toBe(202);
    await poll(t, viaGet.headers.get('location')!);
    const plain = await t.request('POST', '/api/seo-check', { url });
    expect(plain.status).toBe(200);
    expect(((await jsonWithoutRequestId(plain)) as { score: number }).score).toBeTypeOf('number');
    const fast = await t.request('POST', '/api/base-convert', { value: '255' }, ASYNC);
    expect(fast.status).toBe(200);
    expect(fast.headers.get('location')).toBeNull();
  });

  it('a tool error: the task completes with the error body and status the synchronous call gives', async () => {
    const res = await t.request('POST', '/api/image-convert', { url: `${site.url}/gone.html?ms=300` }, ASYNC);
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    const done = await poll(t, location);
    expect(done).toMatchObject({ resultStatus: 502, result: { success: false, error: { code: 'UPSTREAM_ERROR' } } });
    const replay = await t.request('GET', `${location}/result`);
    expect(replay.status).toBe(502);
    expect(await jsonWithoutRequestId(replay)).toStrictEqual(done.result);
  });

  it('bad input with Prefer is answered at once (400), without a task', async () => {
    const res = await t.request('POST', '/api/seo-check', { url: 'not a url' }, ASYNC);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('a binary result (image_convert): the task says its type and size; /result answers the bytes with the tool headers', async () => {
    const res = await t.request('POST', '/api/image-convert', { url: `${site.url}/slow.png?ms=400`, format: 'png' }, ASYNC);
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    const done = await poll(t, location);
    expect(done).toMatchObject({ status: 'completed', resultStatus: 200, resultContentType: 'image/png' });
    expect(done.result).toBeUndefined();
    const bytes = await t.request('GET', `${location}/result`);
    expect(bytes.status).toBe(200);
    expect(bytes.headers.get('content-type')).toBe('image/png');
    expect(bytes.headers.get('x-image-width')).toBe('40');
    const buf = Buffer.from(await bytes.arrayBuffer());
    expect(buf.length).toBe(done.resultBytes);
    expect(buf.subarray(1, 4).toString()).toBe('PNG');
  });

  it('DELETE cancels: the task reads cancelled and the slow fetch is aborted; /result is 409; DELETE again is idempotent', async () => {
    const opened = site.hangsOpened;
    const closed = site.hangsClosed;
    const res = await t.request('POST', '/api/meta-extract', { url: `${site.url}/hang.html` }, ASYNC);
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    for (let i = 0; i < 50 && site.hangsOpened === opened; i++) await new Promise((r) => setTimeout(r, 20));
    const del = await t.request('DELETE', location);
    expect(del.status).toBe(200);
    expect(await jsonWithoutRequestId(del)).toMatchObject({ success: true, status: 'cancelled' });
    for (let i = 0; i < 50 && site.hangsClosed === closed; i++) await new Promise((r) => setTimeout(r, 20));
    expect(site.hangsClosed).toBe(closed + 1);
    expect(((await (await t.request('GET', location)).json()) as { status: string }).status).toBe('cancelled');
    const result = await t.request('GET', `${location}/result`);
    expect(result.status).toBe(409);
    expect((await t.request('DELETE', location)).status).toBe(200);
  });

  it('cancelling image conversions frees their gate slots (two at a time)', async () => {
    const before = CONVERSIONS.load.running;
    const locations: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await t.request('POST', '/api/image-convert', { url: `${site.url}/hang.html` }, ASYNC);
      expect(res.status).toBe(202);
      locations.push(res.headers.get('location')!);
    }
    for (let i = 0; i < 100 && CONVERSIONS.load.running < before + 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(CONVERSIONS.load.running).toBe(before + 2);
    for (const l of locations) expect(((await (await t.request('DELETE', l)).json()) as { status: string }).status).toBe('cancelled');
    for (let i = 0; i < 100 && CONVERSIONS.load.running > before; i++) await new Promise((r) => setTimeout(r, 10));
    expect(CONVERSIONS.load).toEqual({ running: before, waiting: 0 });
  });

  it('another caller gets 404 for the task, as for an unknown id', async () => {
    const keyA = ((await (await t.request('POST', '/api/auth/register', { email: 'tasks-a@example.com' })).json()) as { api_key: string }).api_key;
    const keyB = ((await (await t.request('POST', '/api/auth/register', { email: 'tasks-b@example.com' })).json()) as { api_key: string }).api_key;
    const a = { authorization: `Bearer ${keyA}` };
    const res = await t.request('POST', '/api/seo-check', { url: `${site.url}/slow.html?ms=300` }, { ...ASYNC, ...a });
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    for (const other of [{ authorization: `Bearer ${keyB}` }, {}] as Array<Record<string, string>>) {
      for (const [m, p] of [['GET', location], ['GET', `${location}/result`], ['DELETE', location]] as const) {
        const r = await t.request(m, p, undefined, other);
        expect(r.status, `${m} ${p}`).toBe(404);
        expect(await jsonWithoutRequestId(r)).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
      }
    }
    expect((await t.request('GET', '/api/tasks/00000000-0000-4000-8000-000000000000', undefined, a)).status).toBe(404);
    await poll(t, location, a);
  });
});

// RATE_LIMITS=off "turns off all of it" (docs/auth.md), yet task polling still answered 429.
describe('tasks over REST with RATE_LIMITS=off (the test app’s setting)', () => {
  it('polling is not bounded: 60 polls in a row all answer', async () => {
    expect(t.services.config.rateLimits).toBe(false);
    const res = await t.request('POST', '/api/seo-check', { url: `${site.url}/slow.html?ms=200` }, ASYNC);
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    const statuses = [];
    for (let i = 0; i < 60; i++) statuses.push((await t.request('GET', location)).status);
    expect(statuses).toStrictEqual(Array(60).fill(200));
    await poll(t, location);
  });
});

describe('tasks over REST with limits on', () => {
  const lt = useTestApp({ env: { RATE_LIMITS: 'on', PLAN_KEYLESS: '5/50/20' } });

  it('a task counts once, when created; polling takes no unit but is bounded (429 with Retry-After past the burst)', async () => {
    const res = await lt.request('POST', '/api/seo-check', { url: `${site.url}/slow.html?ms=200` }, ASYNC);
    expect(res.status).toBe(202);
    expect(res.headers.get('ratelimit-remaining')).toBe('4');
    const location = res.headers.get('location')!;
    await poll(lt, location);
    const after = await lt.request('POST', '/api/base-convert', { value: '1' });
    expect(after.headers.get('ratelimit-remaining')).toBe('3');
    let refused: Response | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const r = await lt.request('GET', location);
      if (r.status === 429) refused = r;
    }
    expect(refused).toBeDefined();
    expect(refused!.headers.get('retry-after')).toBe('1');
    expect(await refused!.json()).toMatchObject({ error: { code: 'RATE_LIMITED', message: expect.stringMatching(/Polling too fast/) as unknown } });
  });
});

describe('tasks of a worker-pool tool', () => {
  const wt = useTestApp({ env: { WORKERS: '1' } });

  it('file_process analyze of a large CSV as a task; cancelling it frees the worker (terminated and replaced)', async () => {
    const rows = Array.from({ length: 150_000 }, (_, i) => `${i},name-${i},${(i * 7) % 1000}.5,${i % 2 === 0}`);
    const content = `id,name,score,flag\n${rows.join('\n')}`;
    const res = await wt.request('POST', '/api/file-process', { action: 'analyze', content, format: 'csv' }, ASYNC);
    expect(res.status).toBe(202);
    const location = res.headers.get('location')!;
    for (let i = 0; i < 50 && wt.pool!.stats.busy === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const del = await wt.request('DELETE', location);
    expect(await jsonWithoutRequestId(del)).toMatchObject({ status: 'cancelled' });
    expect(wt.pool!.stats.busy).toBe(0);
    // The slot is free: a small call goes through at once.
    const small = await wt.request('POST', '/api/file-process', { action: 'analyze', content: 'a,b\n1,2', format: 'csv' });
    expect(small.status).toBe(200);
    // And a task of it runs to completion.
    const again = await wt.request('POST', '/api/file-process', { action: 'analyze', content, format: 'csv' }, ASYNC);
    expect(again.status).toBe(202);
    const done = await poll(wt, again.headers.get('location')!, {}, 'completed', 30_000);
    expect(done.result).toMatchObject({ success: true, rowCount: 150_000, columnCount: 4 });
  }, 60_000);
});
