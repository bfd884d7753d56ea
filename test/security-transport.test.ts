// Issue 34: the security tools over REST (a real socket), MCP with the SDK v1 (legacy) and v2
// (2026-07-28) clients over HTTP with ?toolsets=security, and stdio; the JWKS fetch through the
// guarded fetcher (cached; a private address refused; the header's jku never followed).
import { generateKeyPairSync, sign } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenTestApp, mcpError, tempDir, type ListeningApp } from './harness.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');
const SECURITY = ['hash', 'encode', 'jwt_decode', 'id_generate', 'id_inspect', 'cert_decode'];
const ABC_SHA256 = { hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad', base64: 'ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=' };

// An RS256 key, its JWKS and a token signed with node:crypto (not jose, which verifies).
const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = { ...publicKey.export({ format: 'jwk' }), kid: 'k1', use: 'sig', alg: 'RS256' };

/** A loopback server answering `body` on every path and counting its requests. */
async function fixture(body: string): Promise<{ url: string; hits: () => number; close: () => Promise<void> }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits: () => hits, close: () => new Promise((r) => server.close(() => r())) };
}

function rs256(header: Record<string, unknown>, claims: Record<string, unknown>): string {
  const input = `${Buffer.from(JSON.stringify({ alg: 'RS256', ...header })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`;
  return `${input}.${sign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}

let t: ListeningApp;
let strict: ListeningApp;
let jwks: Awaited<ReturnType<typeof fixture>>;
let evil: Awaited<ReturnType<typeof fixture>>;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
  t = await listenTestApp();
  strict = await listenTestApp({ env: { FETCH_ALLOW_PRIVATE: 'false' } });
  jwks = await fixture(JSON.stringify({ keys: [jwk] }));
  evil = await fixture(JSON.stringify({ keys: [] }));
});
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await Promise.all([t.close(), strict.close(), jwks.close(), evil.close()]);
});

async function rest(app: ListeningApp, p: string, body: unknown): Promise<{ status: number; body: any }> {
  const r = await fetch(`${app.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}

describe('REST over a socket', () => {
  it('each tool answers on its own path', async () => {
    expect(await rest(t, '/api/hash', { input: 'abc' })).toStrictEqual({ status: 200, body: { success: true, digests: { sha256: ABC_SHA256 }, hmac: false, bytes: 3 } });
    expect(await rest(t, '/api/encode', { input: 'Zm9vYmFy', action: 'decode' })).toStrictEqual({ status: 200, body: { success: true, result: 'foobar', is_utf8: true, bytes: 6 } });
    expect(await rest(t, '/api/id-inspect', { value: '017F22E2-79B0-7CC3-98C4-DC0C0C07398F' })).toMatchObject({ status: 200, body: { success: true, version: 7, timestamp: '2022-02-22T19:22:22.000Z' } });
    const ids = await rest(t, '/api/id-generate', { kind: 'ulid', count: 3 });
    expect(ids.status).toBe(200);
    expect(ids.body.ids).toHaveLength(3);
    const cert = await rest(t, '/api/cert-decode', t.registry.get('cert_decode')!.example);
    expect(cert).toMatchObject({ status: 200, body: { success: true, certificates: [{ subject: 'CN=example.com', san: ['DNS:example.com', 'DNS:www.example.com'], key: { type: 'ec', curve: 'prime256v1' }, self_signed: true }] } });
  });

  it('a certificate of 10 MB is a 413 before any parsing; a 300 KB one a 400', async () => {
    const big = `-----BEGIN CERTIFICATE-----\n${'A'.repeat(10 * 1024 * 1024)}\n-----END CERTIFICATE-----`;
    expect(await rest(t, '/api/cert-decode', { pem: big })).toMatchObject({ status: 413, body: { success: false, error: { code: 'PAYLOAD_TOO_LARGE' } } });
    expect(await rest(t, '/api/cert-decode', { pem: big.slice(0, 300_000) })).toMatchObject({ status: 400, body: { success: false, error: { code: 'INVALID_INPUT' } } });
  });
});

describe('jwt_decode with jwks_url: the guarded fetcher', () => {
  const claims = { sub: 'x', exp: 4102444800 };

  it('verifies through the JWKS, fetched once (cached), and never follows the header jku', async () => {
    const token = rs256({ kid: 'k1', jku: `${evil.url}/jwks`, x5u: `${evil.url}/cert` }, claims);
    const before = jwks.hits();
    for (let i = 0; i < 3; i++) {
      expect(await rest(t, '/api/jwt-decode', { token, jwks_url: `${jwks.url}/jwks.json` })).toMatchObject({
        status: 200,
        body: { verified: true, signature_valid: true, errors: [], warnings: ['header_jku_ignored', 'header_x5u_ignored'] },
      });
    }
    expect(jwks.hits() - before).toBe(1);
    expect(evil.hits()).toBe(0);
    expect(await rest(t, '/api/jwt-decode', { token: rs256({ kid: 'other' }, claims), jwks_url: `${jwks.url}/jwks.json` })).toMatchObject({ status: 200, body: { verified: false, errors: ['key_not_found'] } });
  });

  it('the cache is bounded: past 32 URLs the oldest is fetched again', async () => {
    const token = rs256({ kid: 'k1' }, claims);
    const call = async (i: number) => expect((await rest(t, '/api/jwt-decode', { token, jwks_url: `${jwks.url}/bound?${i}` })).body.verified).toBe(true);
    const before = jwks.hits();
    for (let i = 0; i < 33; i++) await call(i);
    await call(32);
    expect(jwks.hits() - before).toBe(33);
    await call(0);
    expect(jwks.hits() - before).toBe(34);
  });

  it('a JWKS on a private address is refused with URL_NOT_ALLOWED, nothing fetched', async () => {
    const before = jwks.hits();
    for (const url of [`${jwks.url}/jwks.json`, 'http://169.254.169.254/latest/meta-data', 'http://[::1]/jwks', 'http://localhost/jwks']) {
      expect(await rest(strict, '/api/jwt-decode', { token: rs256({ kid: 'k1' }, claims), jwks_url: url }), url).toMatchObject({ status: 400, body: { success: false, error: { code: 'URL_NOT_ALLOWED' } } });
    }
    expect(jwks.hits()).toBe(before);
    expect(await rest(t, '/api/jwt-decode', { token: rs256({}, claims), jwks_url: 'file:///etc/passwd' })).toMatchObject({ status: 400 });
  });

  it('a JWKS URL that answers something else is a 502', async () => {
    const bad = await fixture('{"not":"a key set"}');
    closers.push(bad.close);
    expect(await rest(t, '/api/jwt-decode', { token: rs256({}, claims), jwks_url: `${bad.url}/` })).toMatchObject({ status: 502, body: { error: { code: 'UPSTREAM_ERROR' } } });
  });
});

describe('MCP', () => {
  it('SDK v1 (legacy) over HTTP with ?toolsets=security: the six tools, structuredContent equal to REST', async () => {
    const c = new ClientV1({ name: 'sec', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${t.url}/mcp?toolsets=security`)));
    const { tools } = await c.listTools();
    expect(tools.map((x) => x.name)).toStrictEqual(SECURITY);
    for (const tool of tools) expect(JSON.stringify(tool).length, tool.name).toBeLessThan(3000);
    const r = await c.callTool({ name: 'hash', arguments: { input: 'abc' } });
    expect(r.structuredContent).toStrictEqual({ digests: { sha256: ABC_SHA256 }, hmac: false, bytes: 3 });
    const bad = await c.callTool({ name: 'cert_decode', arguments: { pem: 'x' } });
    expect(bad.isError).toBe(true);
    expect(mcpError(bad).code).toBe('PARSE_ERROR');
  }, 60_000);

  it('SDK v2 (2026-07-28) over HTTP: jwt_decode and id_inspect', async () => {
    const c = new ClientV2({ name: 'sec', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp?toolsets=security`)));
    expect(c.getProtocolEra()).toBe('modern');
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"sub":"root"}').toString('base64url')}.`;
    const r = (await c.callTool({ name: 'jwt_decode', arguments: { token: none, secret: 'anything' } })) as { structuredContent?: unknown };
    expect(r.structuredContent).toMatchObject({ header: { alg: 'none' }, payload: { sub: 'root' }, verified: false, errors: ['alg_none'] });
    const id = (await c.callTool({ name: 'id_inspect', arguments: { value: '1EC9414C-232A-6B00-B3C8-9F6BDECED846' } })) as { structuredContent?: unknown };
    expect(id.structuredContent).toMatchObject({ kind: 'uuid', version: 6, timestamp: '2022-02-22T19:22:22.000Z' });
  }, 60_000);

  it('stdio (built server) with --toolsets security', async () => {
    const c = new ClientV1({ name: 'sec', version: '1.0.0' });
    closers.push(() => c.close());
    const env = { ...(process.env as Record<string, string>), DATA_DIR: tempDir(), LOG_LEVEL: 'warn', RATE_LIMITS: 'off' };
    await c.connect(new StdioV1({ command: process.execPath, args: [bin, 'stdio', '--toolsets', 'security'], env, stderr: 'pipe' }));
    expect((await c.listTools()).tools.map((x) => x.name)).toStrictEqual(SECURITY);
    const r = await c.callTool({ name: 'encode', arguments: { input: 'a b', codec: 'url' } });
    expect(r.structuredContent).toStrictEqual({ result: 'a%20b', bytes: 3 });
  }, 60_000);
});
