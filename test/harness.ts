import { serve, type ServerType } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hardenServer, SERVER_OPTIONS } from '../src/http/server.js';
import { buildService, type Service } from '../src/app.js';
import { McpFactory } from '../src/mcp/server.js';
import type { ServiceOverrides } from '../src/services.js';
import { testConfig } from './context.js';

export interface TestApp extends Service {
  /** REST through app.request() (no socket). JSON bodies are serialised for you. */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** A real SDK Client connected to a server built from the same registry, in memory. */
  mcpClient(): Promise<Client>;
}

/** The whole service on a temp data dir (FETCH_ALLOW_PRIVATE=true, RATE_LIMITS=off unless overridden). */
export async function startTestApp(opts: { env?: Record<string, string>; overrides?: ServiceOverrides } = {}): Promise<TestApp> {
  const service = await buildService(testConfig(opts.env), opts.overrides);
  await service.ready;
  const clients: Client[] = [];
  return {
    ...service,
    request(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } };
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body);
        if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
          (init.headers as Record<string, string>)['content-type'] = 'application/json';
        }
      }
      return Promise.resolve(service.app.request(path, init));
    },
    async mcpClient() {
      const server = new McpFactory({ registry: service.registry, calls: service.calls }).create({
        caller: { keyId: null, ip: 'memory', transport: 'memory' },
        headers: undefined,
      });
      const [a, b] = InMemoryTransport.createLinkedPair();
      await server.connect(a);
      const client = new Client({ name: 'test', version: '1.0.0' });
      await client.connect(b);
      clients.push(client);
      return client;
    },
    async close() {
      for (const c of clients) await c.close().catch(() => {});
      await service.close();
    },
  };
}

export interface ListeningApp extends TestApp {
  url: string;
  server: ServerType;
  /** A real SDK Client over streamable HTTP to this server's /mcp. */
  httpClient(headers?: Record<string, string>): Promise<Client>;
}

/** The service on a real loopback socket (random port). */
export async function listenTestApp(opts: { env?: Record<string, string>; overrides?: ServiceOverrides } = {}): Promise<ListeningApp> {
  const t = await startTestApp(opts);
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: t.app.fetch, port: 0, hostname: '127.0.0.1', serverOptions: SERVER_OPTIONS }, () => resolve(s));
    hardenServer(s as Server, t.services.config);
  });
  const port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const clients: Client[] = [];
  return {
    ...t,
    url,
    server,
    async httpClient(headers = {}) {
      const client = new Client({ name: 'test-http', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
      clients.push(client);
      return client;
    },
    async close() {
      for (const c of clients) await c.close().catch(() => {});
      await new Promise<void>((r) => server.close(() => r()));
      await t.close();
    },
  };
}

/** Parses the JSON error a failing MCP call carries in its one text block. */
export function mcpError(result: unknown): { code: string; message: string; details?: unknown } {
  const content = (result as { content?: unknown }).content as Array<{ type: string; text?: string }>;
  const block = content.find((c) => c.type === 'text');
  return (JSON.parse(block?.text ?? '{}') as { error: { code: string; message: string; details?: unknown } }).error;
}
