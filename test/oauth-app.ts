import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { SERVER_OPTIONS, hardenServer } from '../src/http/server.js';
import type { ServiceOverrides } from '../src/services.js';
import { startTestApp, type TestApp } from './harness.js';

/** A free loopback port (the issuer and resource URLs must name the port the server listens on). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** The service on a loopback socket whose PUBLIC_BASE_URL is its own address (sign-in needs one). */
export interface OAuthApp extends TestApp {
  url: string;
  server: ServerType;
}

export async function listenOAuthApp(env: Record<string, string> = {}, overrides: ServiceOverrides = {}): Promise<OAuthApp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const t = await startTestApp({ env: { PUBLIC_BASE_URL: url, ...env }, overrides });
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: t.app.fetch, port, hostname: '127.0.0.1', serverOptions: SERVER_OPTIONS }, () => resolve(s));
    hardenServer(s as Server, t.services.config);
  });
  return {
    ...t,
    url,
    server,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await t.close();
    },
  };
}
