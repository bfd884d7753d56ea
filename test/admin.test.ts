/**
 * Plan changes while the server runs: the admin route (only with ADMIN_TOKEN) and
 * `devtoolbox keys set-plan` finding a running server through the address it recorded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { keysCommand, type CliIo } from '../src/keys-cli.js';
import { closeAfterEach, testConfig, tempDir, startTestApp, type TestApp } from './harness.js';
import { killServerProcesses, startServerProcess } from './server-process.js';

const TOKEN = 'admin-token-0123456789abcdef';

function capture(): CliIo & { stdout: string; stderr: string } {
  const io = { stdout: '', stderr: '', out: (s: string) => void (io.stdout += s), err: (s: string) => void (io.stderr += s) };
  return io;
}

const closing = closeAfterEach();
afterEach(killServerProcesses);

async function app(env: Record<string, string>): Promise<TestApp> {
  return closing(await startTestApp({ env }));
}

describe('admin route', () => {
  it('does not exist without ADMIN_TOKEN (404 like any unknown path)', async () => {
    const a = await app({});
    expect((await a.request('POST', '/admin/keys/plan', { email: 'x@example.com', plan: 'pro' }, { authorization: `Bearer ${TOKEN}` })).status).toBe(404);
    expect((await a.request('GET', '/admin/keys', undefined, { authorization: `Bearer ${TOKEN}` })).status).toBe(404);
  });

  it('refuses a wrong or missing token with 401, and changes a plan at once with the right one', async () => {
    const a = await app({ ADMIN_TOKEN: TOKEN, RATE_LIMITS: 'on' });
    const reg = await a.request('POST', '/api/auth/register', { email: 'grow@example.com' });
    const { api_key } = (await reg.json()) as { api_key: string };
    const info = async () => ((await (await a.request('GET', '/api/auth/info', undefined, { authorization: `Bearer ${api_key}` })).json()) as { plan: string; limits: unknown });
    expect(await info()).toMatchObject({ plan: 'free', limits: { per_minute: 10, per_day: 100 } });

    for (const auth of [undefined, 'Bearer wrong-token-0123456789abcdef', `Bearer ${TOKEN}x`, TOKEN]) {
      const r = await a.request('POST', '/admin/keys/plan', { email: 'grow@example.com', plan: 'pro' }, auth ? { authorization: auth } : {});
      expect([auth, r.status]).toStrictEqual([auth, 401]);
    }
    const bad = await a.request('POST', '/admin/keys/plan', { email: 'grow@example.com', plan: 'gold' }, { authorization: `Bearer ${TOKEN}` });
    expect(bad.status).toBe(400);
    const unknown = await a.request('POST', '/admin/keys/plan', { email: 'nobody@example.com', plan: 'pro' }, { authorization: `Bearer ${TOKEN}` });
    expect(unknown.status).toBe(404);

    const ok = await a.request('POST', '/admin/keys/plan', { email: 'GROW@example.com', plan: 'pro' }, { authorization: `Bearer ${TOKEN}` });
    expect(await ok.json()).toStrictEqual({ success: true, email: 'grow@example.com', key_prefix: api_key.slice(0, 8), plan: 'pro' });
    expect(await info()).toMatchObject({ plan: 'pro', limits: { per_minute: 60, per_day: 5000 } });
    // The next call is limited by the new plan.
    const r = await a.request('POST', '/api/base-convert', { value: '1' }, { authorization: `Bearer ${api_key}` });
    expect(r.headers.get('ratelimit-limit')).toBe('60');
  });
});

describe('devtoolbox keys with the server running', () => {
  it('set-plan and list go through the admin route of the server recorded in DATA_DIR; without ADMIN_TOKEN they say what to do', async () => {
    const dataDir = tempDir('dtb-admin-');
    const { base } = await startServerProcess({ DATA_DIR: dataDir, ADMIN_TOKEN: TOKEN, WORKERS: '0' });
    const reg = await fetch(`${base}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":"live@example.com"}' });
    const { api_key } = (await reg.json()) as { api_key: string };
    const config = testConfig({ DATA_DIR: dataDir });

    const noToken = capture();
    expect(await keysCommand(['set-plan', 'live@example.com', 'pro'], config, noToken, {})).toBe(1);
    expect(noToken.stderr).toBe(`devtoolbox keys: a server is running (${base}); set ADMIN_TOKEN to the server's to change keys while it runs, or stop it first\n`);

    const ok = capture();
    expect(await keysCommand(['set-plan', 'live@example.com', 'pro'], config, ok, { ADMIN_TOKEN: TOKEN })).toBe(0);
    expect(ok.stdout).toBe(`live@example.com (${api_key.slice(0, 8)}…) is now on the pro plan\n`);
    const info = await fetch(`${base}/api/auth/info`, { headers: { authorization: `Bearer ${api_key}` } });
    expect(((await info.json()) as { plan: string }).plan).toBe('pro');

    const list = capture();
    expect(await keysCommand(['list'], config, list, { ADMIN_TOKEN: TOKEN })).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`^${api_key.slice(0, 8)}…\\s+pro\\s+\\S+\\s+live@example.com$`, 'm'));
    expect(list.stdout).not.toContain(api_key);

    // DEVTOOLBOX_URL names the server when no record is there (a wrong one fails clearly).
    const wrong = capture();
    expect(await keysCommand(['list'], config, wrong, { ADMIN_TOKEN: TOKEN, DEVTOOLBOX_URL: 'http://127.0.0.1:9' })).toBe(1);
    expect(wrong.stderr).toMatch(/^devtoolbox keys: cannot reach the server at http:\/\/127\.0\.0\.1:9/);
  }, 60_000);
});
