import { describe, expect, it } from 'vitest';
import { useTestApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const t = useTestApp();

describe('GET /s/{code}', () => {
  it('redirects with 302 and counts one click per visit', async () => {
    const created = await t.request('POST', '/api/shorten', { url: 'https://example.com/a?b=1', code: 'redir-1' });
    expect(created.status).toBe(201);
    for (let i = 0; i < 3; i++) {
      const r = await t.request('GET', '/s/redir-1');
      expect(r.status).toBe(302);
      expect(r.headers.get('location')).toBe('https://example.com/a?b=1');
    }
    const stats = (await (await t.request('GET', '/api/shorten?code=redir-1')).json()) as { clicks: number; lastClickedAt: string | null };
    expect(stats.clicks).toBe(3);
    expect(typeof stats.lastClickedAt).toBe('string');
  });

  it('answers 404 for unknown and malformed codes', async () => {
    for (const code of ['nope-nope', 'x', 'a%00b', 'a'.repeat(30)]) {
      const r = await t.request('GET', `/s/${code}`);
      expect(r.status).toBe(404);
      expect(await jsonWithoutRequestId(r)).toStrictEqual({ success: false, error: { code: 'NOT_FOUND', message: 'Unknown short link' } });
    }
  });
});
