/**
 * The in-process test harness: the real service inside the test process, on a temp data dir.
 * Four levels, each built on the one before:
 * - `testConfig` / `testServices` / `toolContext`: config, services, a handler's context;
 * - `toolHarness`: any tool through the one call path (CallPath) on those services (a memory
 *   store unless `disk: true`) — the tool tests beside each family;
 * - `startTestApp`: the whole service, REST through app.request() and MCP over an in-memory SDK client;
 * - `listenTestApp`: the same on a real loopback socket, with an SDK client over streamable HTTP.
 * `useToolHarness` / `useTestApp` / `useListeningApp` start one for a file or describe block
 * (beforeAll) and close it after (afterAll); `closeAfterEach` closes what a test started.
 * The server as a separate process (crash, admin, multi-instance tests) is test/server-process.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { buildService, type Service } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { CallPath, type ProgressFn } from '../src/core/call.js';
import { ToolError } from '../src/errors.js';
import { hardenServer, SERVER_OPTIONS } from '../src/http/server.js';
import { createLogger } from '../src/log.js';
import { McpFactory } from '../src/mcp/server.js';
import type { AnyTool, Caller, RichResult, ToolContext } from '../src/registry.js';
import { withoutIdField } from './request-ids.js';
import { closeServices, createServices, type Clock, type ServiceOverrides, type Services } from '../src/services.js';
import { createMemoryStore } from '../src/state/index.js';

// --- config, services, a handler's context ------------------------------------------------

/** A fresh temp directory, removed by the caller (or left in /tmp on failure). */
export function tempDir(prefix = 'dtb-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Config for tests: a temp DATA_DIR, private fetches allowed, limits off, quiet logs, heavy
 * tools inline (WORKERS=0; the tests of the worker pool and of hostile load turn it on).
 */
export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: tempDir(),
    FETCH_ALLOW_PRIVATE: 'true',
    WORKERS: '0',
    RATE_LIMITS: 'off',
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: 'http://short.test',
    ...env,
  });
}

/** Real services on a temp data dir. Close them with closeServices(). */
export async function testServices(env: Record<string, string> = {}, overrides: ServiceOverrides = {}): Promise<Services> {
  const config = testConfig(env);
  return createServices(config, { log: createLogger(config.logLevel), ...overrides });
}

/** A ToolContext for calling handlers or invokeTool() directly. */
export function toolContext(services: Services, caller: Partial<Caller> = {}, progress: ToolContext['progress'] = async () => {}): ToolContext {
  return {
    services,
    caller: { keyId: null, ip: '127.0.0.1', transport: 'memory', ...caller },
    progress,
    signal: new AbortController().signal,
  };
}

// --- any tool through the one call path ----------------------------------------------------

export interface CallOptions {
  caller?: Partial<Caller>;
  progress?: ProgressFn;
  signal?: AbortSignal;
}

/** What a failed call answered: the status of its code, and the contract's error object. */
export interface Failure {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

export interface ToolHarness {
  readonly services: Services;
  /** The whole result (json, and a binary body or extra MCP content when the tool gives them). Throws the ToolError of a failed call. */
  run(tool: AnyTool, input: unknown, opts?: CallOptions): Promise<RichResult<Record<string, unknown>>>;
  /** The JSON result. Throws the ToolError of a failed call. */
  call(tool: AnyTool, input: unknown, opts?: CallOptions): Promise<Record<string, unknown>>;
  /** The error of a call that must fail; throws when it succeeds. */
  failure(tool: AnyTool, input: unknown, opts?: CallOptions): Promise<Failure>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** true: the file store on a temp DATA_DIR (default: the memory store). */
  disk?: boolean;
  overrides?: ServiceOverrides;
}

const CALLER: Caller = { keyId: null, ip: '127.0.0.1', transport: 'memory' };

/** Real services and a call path over them. Close it when done. */
export async function toolHarness(opts: HarnessOptions = {}): Promise<ToolHarness> {
  const services = await testServices(opts.env, {
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.disk ? {} : { store: createMemoryStore() }),
    ...opts.overrides,
  });
  const calls = new CallPath(services);
  const run = async (tool: AnyTool, input: unknown, o: CallOptions = {}) => {
    const out = await calls.call({ ...CALLER, ...o.caller }, tool, input, { progress: o.progress, signal: o.signal });
    if (!out.ok) throw out.error;
    return out.value;
  };
  return {
    services,
    run,
    call: async (tool, input, o) => (await run(tool, input, o)).json,
    async failure(tool, input, o = {}) {
      const out = await calls.call({ ...CALLER, ...o.caller }, tool, input, { progress: o.progress, signal: o.signal });
      if (out.ok) throw new Error(`expected ${tool.name} to fail on ${JSON.stringify(input)?.slice(0, 200)}`);
      const e: ToolError = out.error;
      // The check the copied set-ups each made: a failure is always a ToolError, never anything else.
      expect(e).toBeInstanceOf(ToolError);
      return { status: e.status, ...e.toJSON() };
    },
    close: () => closeServices(services),
  };
}

/** A tool harness for a whole test file or describe block (see useFor). */
export function useToolHarness(opts: HarnessOptions = {}): ToolHarness {
  return useFor('useToolHarness', () => toolHarness(opts));
}

// --- the whole service, in memory and on a socket -----------------------------------------

export interface AppOptions {
  env?: Record<string, string>;
  overrides?: ServiceOverrides;
}

export interface TestApp extends Service {
  /** REST through app.request() (no socket). JSON bodies are serialised for you. */
  request(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>;
  /** A real SDK Client connected to a server built from the same registry, in memory. */
  mcpClient(): Promise<Client>;
}

/** The whole service on a temp data dir (FETCH_ALLOW_PRIVATE=true, RATE_LIMITS=off unless overridden). */
export async function startTestApp(opts: AppOptions = {}): Promise<TestApp> {
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
export async function listenTestApp(opts: AppOptions = {}): Promise<ListeningApp> {
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

/** An in-memory app for a whole test file or describe block (see useFor). */
export function useTestApp(opts: AppOptions = {}): TestApp {
  return useFor('useTestApp', () => startTestApp(opts));
}

/** A listening app for a whole test file or describe block (see useFor). */
export function useListeningApp(opts: AppOptions = {}): ListeningApp {
  return useFor('useListeningApp', () => listenTestApp(opts));
}

/**
 * Parses the JSON error a failing MCP call carries in its one text block, as the contract
 * writes it: the `request_id` an HTTP answer adds (one of ours: REQUEST_ID) is checked and taken
 * out (./request-ids.ts); `mcpErrorObject` keeps it.
 */
export function mcpError(result: unknown): { code: string; message: string; details?: unknown } {
  return withoutIdField(mcpErrorObject(result));
}

/** The JSON error of a failing MCP call's text block, whole (`request_id` included when it has one). */
export function mcpErrorObject(result: unknown): { code: string; message: string; details?: unknown; request_id?: string } {
  const content = (result as { content?: unknown }).content as Array<{ type: string; text?: string }>;
  const block = content.find((c) => c.type === 'text');
  return (JSON.parse(block?.text ?? '{}') as { error: { code: string; message: string; details?: unknown; request_id?: string } }).error;
}

// --- lifetimes -----------------------------------------------------------------------------

interface Closable {
  close(): Promise<unknown> | unknown;
}

/**
 * Starts one harness in beforeAll and closes it in afterAll. The value returned stands for it:
 * read its fields inside tests; a method may be taken at collection time (`const call = t.call`)
 * and called inside tests.
 */
function useFor<T extends Closable>(name: string, start: () => Promise<T>): T {
  let current: T | undefined;
  beforeAll(async () => {
    current = await start();
  });
  afterAll(async () => {
    await current?.close();
  });
  const started = (): T => {
    if (!current) throw new Error(`${name}: use it inside a test, after beforeAll`);
    return current;
  };
  return new Proxy({} as T, {
    get(_target, key) {
      // Not a promise: `await` of it must not find a `then`.
      if (key === 'then') return undefined;
      if (!current) return (...args: unknown[]) => (Reflect.get(started(), key) as (...a: unknown[]) => unknown).apply(started(), args);
      const v: unknown = Reflect.get(current, key);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(current) : v;
    },
  });
}

/**
 * For tests that start their own apps or services: `closing(x)` returns x and closes it after
 * the test, the last started first.
 */
export function closeAfterEach(): <T extends Closable>(x: T) => T {
  const open: Closable[] = [];
  afterEach(async () => {
    for (const o of open.splice(0).reverse()) await o.close();
  });
  return (x) => {
    open.push(x);
    return x;
  };
}
