import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createServer as createHttps, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from './harness.js';
import { Browser, locationOf, pkce } from './oauth-signin.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

/**
 * Client ID Metadata Documents: the client_id is an https URL whose JSON names the client. The
 * fixture is an https server on loopback with a certificate made here; the spawned server trusts
 * it through NODE_EXTRA_CA_CERTS and reaches loopback through FETCH_ALLOW_PRIVATE=true.
 */
let fixture: Server;
let origin: string;
let server: ServerProcess;
let base: string;
let certPath: string;

async function freePort(): Promise<number> {
  const s = (await import('node:net')).createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

beforeAll(async () => {
  const dir = tempDir('dtb-cimd-');
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  certPath = cert;
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  fixture = createHttps({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
    const self = `${origin}${req.url}`;
    const doc = (body: unknown) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/good.json') return doc({ client_id: self, client_name: 'Metadata Client', redirect_uris: ['http://127.0.0.1:9/callback'], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' });
    if (req.url === '/other.json') return doc({ client_id: `${origin}/good.json`, client_name: 'Impostor', redirect_uris: ['http://127.0.0.1:9/callback'], token_endpoint_auth_method: 'none' });
    if (req.url === '/huge.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const pad = 'x'.repeat(1024 * 1024);
      res.write(`{"client_id":"${self}","client_name":"`);
      for (let i = 0; i < 10; i++) res.write(pad);
      return res.end('"}');
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => fixture.listen(0, '127.0.0.1', () => r()));
  origin = `https://127.0.0.1:${(fixture.address() as AddressInfo).port}`;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = await startServerProcess({ PORT: String(port), PUBLIC_BASE_URL: base, DATA_DIR: tempDir(), FETCH_ALLOW_PRIVATE: 'true', NODE_EXTRA_CA_CERTS: cert, WORKERS: '0', RATE_LIMITS: 'off' });
}, 60_000);
afterAll(async () => {
  await server?.stop();
  await new Promise<void>((r) => (fixture ? fixture.close(() => r()) : r()));
});

const authorize = (b: string, clientId: string) => {
  const u = new URL(`${b}/oauth/authorize`);
  u.search = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: 'http://127.0.0.1:9/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', scope: 'mcp', resource: `${b}/mcp`, state: 's' }).toString();
  return u.toString();
};

describe('client ID metadata documents', () => {
  it('are advertised', async () => {
    const m = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(m.client_id_metadata_document_supported).toBe(true);
  });

  it('an https client_id names the client on the sign-in page', async () => {
    const browser = new Browser();
    const page = locationOf(await browser.get(authorize(base, `${origin}/good.json`)), base);
    const html = await (await browser.get(page)).text();
    expect(html).toContain('<strong id="client-name">Metadata Client</strong>');
    expect(html).toContain('<strong id="redirect-host">127.0.0.1:9</strong>');
  });

  it('a document whose client_id is not its own URL is refused, with an error page', async () => {
    const res = await new Browser().get(authorize(base, `${origin}/other.json`));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('invalid_client');
  });

  it('a 10 MB document is refused', async () => {
    const res = await new Browser().get(authorize(base, `${origin}/huge.json`));
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain('invalid_client');
  });

  it('a document on a private address is refused unless FETCH_ALLOW_PRIVATE', async () => {
    // The same server, trusting the same certificate, with only the address policy changed.
    const port = await freePort();
    const strictBase = `http://127.0.0.1:${port}`;
    const strict = await startServerProcess({ PORT: String(port), PUBLIC_BASE_URL: strictBase, DATA_DIR: tempDir(), FETCH_ALLOW_PRIVATE: 'false', NODE_EXTRA_CA_CERTS: certPath, WORKERS: '0', RATE_LIMITS: 'off' });
    try {
      const res = await new Browser().get(authorize(strictBase, `${origin}/good.json`));
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.text()).toContain('invalid_client');
    } finally {
      await strict.stop();
    }
  }, 60_000);
});
