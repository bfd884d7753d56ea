// Issue 35: the network family on every face — REST over a real socket (own path and the
// uniform one), MCP over HTTP with the SDK v1 client (legacy era) and the v2 client pinned to
// 2026-07-28, and stdio with the built server.
import fs from 'node:fs';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { mcpError, tempDir, useListeningApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');
const t = useListeningApp();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
});

const post = (p: string, body: unknown) =>
  fetch(`${t.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

const IP = { input: '10.1.2.3/8', contains: '10.200.0.0/16' };
const IP_OUT = {
  input: '10.1.2.3/8', version: 4, address: '10.1.2.3', network: '10.0.0.0', prefix: 8, cidr: '10.0.0.0/8', netmask: '255.0.0.0', wildcard: '0.255.255.255',
  broadcast: '10.255.255.255', first: '10.0.0.0', last: '10.255.255.255', size: '16777216', usable: { first: '10.0.0.1', last: '10.255.255.254', count: '16777214' },
  range: 'private', contains: true,
};
const URL_IN = { url: '/p?a=1&a=2', base: 'https://Example.COM:443/x/y' };
const URL_OUT = {
  href: 'https://example.com/p?a=1&a=2', protocol: 'https:', username: '', password: '', host: 'example.com', hostname: 'example.com', hostname_unicode: 'example.com',
  port: '', pathname: '/p', search: '?a=1&a=2', hash: '', origin: 'https://example.com', query: [['a', '1'], ['a', '2']],
};
const TIME_IN = { at: '2026-10-24T12:00', zone: 'Europe/Berlin', add: 'P1D' };

describe('network tools over REST', () => {
  it('answer on their own paths and on the uniform path alike', async () => {
    for (const [own, name, input, out] of [
      ['/api/ip-calc', 'ip_calc', IP, IP_OUT],
      ['/api/url-parse', 'url_parse', URL_IN, URL_OUT],
    ] as const) {
      for (const p of [own, `/api/tools/${name}`]) {
        const res = await post(p, input);
        expect(res.status, p).toBe(200);
        expect(await jsonWithoutRequestId(res)).toStrictEqual({ success: true, ...out });
      }
    }
    const res = await post('/api/time-calc', TIME_IN);
    expect(res.status).toBe(200);
    expect(await jsonWithoutRequestId(res)).toMatchObject({ success: true, iso: '2026-10-24T12:00:00.000+02:00', result: { iso: '2026-10-25T12:00:00.000+01:00' } });
  });

  it('answer bad input with the contract error shape: 400 for a field, 422 for what does not parse', async () => {
    const bad = await post('/api/ip-calc', { input: '300.1.1.1' });
    expect(bad.status).toBe(422);
    expect(await jsonWithoutRequestId(bad)).toMatchObject({ success: false, error: { code: 'PARSE_ERROR', details: { field: 'input' } } });
    const empty = await post('/api/ip-calc', { input: '' });
    expect(empty.status).toBe(400);
    expect(await jsonWithoutRequestId(empty)).toMatchObject({ success: false, error: { code: 'INVALID_INPUT', details: [{ path: 'input' }] } });
    const url = await post('/api/url-parse', { url: 'http://[::1' });
    expect(url.status).toBe(422);
    expect(await jsonWithoutRequestId(url)).toStrictEqual({ success: false, error: { code: 'PARSE_ERROR', message: 'url is not a valid absolute URL (give base to resolve a relative one)', details: { field: 'url' } } });
    const gap = await post('/api/time-calc', { at: '2026-03-08T02:30', zone: 'America/New_York' });
    expect(gap.status).toBe(422);
    expect(await jsonWithoutRequestId(gap)).toMatchObject({ success: false, error: { code: 'PARSE_ERROR', details: { offsetBefore: '-05:00', offsetAfter: '-04:00' } } });
    const zone = await post('/api/time-calc', { at: 'now', zone: 'Nowhere/Land' });
    expect(zone.status).toBe(400);
    expect(await jsonWithoutRequestId(zone)).toMatchObject({ success: false, error: { code: 'INVALID_INPUT', details: [{ path: 'zone' }] } });
  });
});

describe('network tools over MCP', () => {
  it('SDK v1 client (legacy era) over HTTP', async () => {
    const c = new ClientV1({ name: 'legacy', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${t.url}/mcp`)));
    const names = (await c.listTools()).tools.map((x) => x.name);
    expect(names).toEqual(expect.arrayContaining(['ip_calc', 'url_parse', 'time_calc']));
    const r = await c.callTool({ name: 'url_parse', arguments: URL_IN });
    expect(r.structuredContent).toStrictEqual(URL_OUT);
    expect(r.content).toStrictEqual([{ type: 'text', text: JSON.stringify(URL_OUT) }]);
    const bad = await c.callTool({ name: 'ip_calc', arguments: { input: '1.2.3' } });
    expect(bad.isError).toBe(true);
    expect(mcpError(bad).code).toBe('PARSE_ERROR');
  });

  it('SDK v2 client pinned to 2026-07-28 over HTTP', async () => {
    const c = new ClientV2({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp`)));
    expect(c.getProtocolEra()).toBe('modern');
    const r = await c.callTool({ name: 'ip_calc', arguments: IP });
    expect(r.structuredContent).toStrictEqual(IP_OUT);
    const time = await c.callTool({ name: 'time_calc', arguments: { at: 1767225600, zone: 'Asia/Kolkata' } });
    expect(time.structuredContent).toMatchObject({ iso: '2026-01-01T05:30:00.000+05:30', epoch_ms: 1767225600000, iso_week: '2026-W01', weekday: 'Thursday' });
  });

  it('stdio (the built server), SDK v2 client', async () => {
    expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
    const c = new ClientV2({ name: 'stdio', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    const env = { ...(process.env as Record<string, string>), DATA_DIR: tempDir(), LOG_LEVEL: 'warn', RATE_LIMITS: 'off' };
    await c.connect(new StdioV2({ command: process.execPath, args: [bin, 'stdio'], env, stderr: 'pipe' }));
    const r = await c.callTool({ name: 'time_calc', arguments: TIME_IN });
    expect(r.structuredContent).toMatchObject({ offset: '+02:00', result: { iso: '2026-10-25T12:00:00.000+01:00', dst: false } });
    const u = await c.callTool({ name: 'url_parse', arguments: URL_IN });
    expect(u.structuredContent).toStrictEqual(URL_OUT);
  }, 60_000);
});
