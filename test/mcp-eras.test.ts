// Issue 22: both MCP protocol eras (2026-07-28 and 2025-11-25 and older) on /mcp and on stdio,
// with real clients (SDK v1 = legacy, SDK v2 pinned and auto = modern) and raw requests for the
// error ladder. Issue 20's MCP items (initialize without params, unknown key, tool body limits).
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, listenTestApp, mcpError, type ListeningApp } from './harness.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');
const MODERN = '2026-07-28';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';

let t: ListeningApp;
let png: string;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
  t = await listenTestApp();
  const c = await t.mcpClient();
  const qr = await c.callTool({ name: 'qrcode_generate', arguments: { content: 'hello', format: 'png', size: 64 } });
  png = (qr.content as Array<{ type: string; data?: string }>).find((b) => b.type === 'image')!.data!;
});
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await t.close();
});

type CallResult = { content?: unknown; structuredContent?: unknown; isError?: boolean };
type CallFn = (name: string, args: Record<string, unknown>) => Promise<CallResult>;

/** Each tool's documented example, pointed at this test server where it fetches. */
function inputs(): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const tool of t.registry.tools) out[tool.name] = { ...(tool.example as Record<string, unknown>) };
  out.meta_extract = { url: `${t.url}/`, format: 'full' };
  out.seo_check = { url: `${t.url}/`, format: 'full' };
  out.image_convert = { data: png, format: 'webp' };
  out.url_shorten = { url: 'https://example.com/a/very/long/path' };
  return out;
}

/** Lists (names in registry order) and calls every tool; base_convert exactly. */
async function everyTool(list: () => Promise<{ tools: Array<{ name: string }> }>, call: CallFn): Promise<void> {
  const { tools } = await list();
  expect(tools.map((x) => x.name)).toStrictEqual(t.registry.tools.map((x) => x.name));
  const args = inputs();
  for (const tool of t.registry.tools) {
    const r = await call(tool.name, args[tool.name]!);
    expect(Array.isArray(r.content), tool.name).toBe(true);
    if (r.isError) expect(typeof mcpError(r).code, `${tool.name}: ${JSON.stringify(r.content)}`).toBe('string');
    else expect(r.structuredContent, tool.name).toBeDefined();
  }
  const ok = await call('base_convert', { value: '255' });
  expect(ok.structuredContent).toStrictEqual({ input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' });
  for (const name of ['base_convert', 'html_entity', 'cron_parse', 'timezone_convert', 'qrcode_generate', 'image_convert', 'meta_extract', 'file_process']) {
    const r = await call(name, args[name]!);
    expect(r.isError, `${name}: ${JSON.stringify(r.content).slice(0, 300)}`).toBeFalsy();
  }
}

function stdioEnv(dataDir: string): Record<string, string> {
  return { ...(process.env as Record<string, string>), DATA_DIR: dataDir, LOG_LEVEL: 'warn', FETCH_ALLOW_PRIVATE: 'true', RATE_LIMITS: 'off' };
}

function v2(mode: 'auto' | 'pin'): ClientV2 {
  const c = new ClientV2(
    { name: 'devtoolbox-tests', version: '0.0.0' },
    { versionNegotiation: mode === 'auto' ? { mode: 'auto', probe: { timeoutMs: 20_000, maxRetries: 0 } } : { mode: { pin: MODERN } } },
  );
  closers.push(() => c.close());
  return c;
}

describe('SDK v2 client (2026-07-28)', () => {
  for (const kind of ['http', 'stdio'] as const) {
    for (const mode of ['pin', 'auto'] as const) {
      it(`over ${kind}, ${mode === 'pin' ? 'pinned to 2026-07-28' : 'auto (lands on 2026-07-28)'}: every tool listed and called, progress`, async () => {
        const c = v2(mode);
        const transport =
          kind === 'http'
            ? new HttpV2(new URL(`${t.url}/mcp`))
            : new StdioV2({ command: process.execPath, args: [bin, 'stdio'], env: stdioEnv(tempDir()), stderr: 'pipe' });
        await c.connect(transport);
        expect(c.getProtocolEra()).toBe('modern');
        expect(c.getNegotiatedProtocolVersion()).toBe(MODERN);
        await everyTool(
          () => c.listTools(),
          (name, args) => c.callTool({ name, arguments: args }) as Promise<CallResult>,
        );
        const progress: Array<{ progress: number; total?: number }> = [];
        // The v2 client handles a notification a microtask later but a response at once, and the
        // response drops the call's progress handler: progress read in one chunk with the response
        // (stdio under load) reaches onerror as "unknown token" instead. Sent in order all the same.
        const late: string[] = [];
        c.onerror = (e) => void (/progress notification for an unknown token/.test(String(e)) && late.push(String(e)));
        const r = await c.callTool({ name: 'image_convert', arguments: { data: png, format: 'webp' } }, { onprogress: (p) => void progress.push(p) });
        await new Promise((res) => setImmediate(res));
        expect(r.isError).toBeFalsy();
        // The tool's four steps (0 to 3 of 3), each delivered or dropped by the client's race.
        expect(progress.length + late.length).toBe(4);
        expect(progress.every((p) => p.total === 3)).toBe(true);
        expect(late.every((e) => e.includes('"total":3'))).toBe(true);
        const bad = await c.callTool({ name: 'base_convert', arguments: { value: '12z' } });
        expect(bad.isError).toBe(true);
        expect(mcpError(bad).code).toBe('PARSE_ERROR');
        await expect(c.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool: no_such_tool/);
      }, 120_000);
    }
  }
});

describe('SDK v1 client (legacy era) keeps working', () => {
  it('over HTTP: every tool listed and called, progress over SSE', async () => {
    const c = new ClientV1({ name: 'legacy', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${t.url}/mcp`)));
    expect(c.getServerVersion()?.name).toBe('devtoolbox-mcp');
    await everyTool(
      () => c.listTools(),
      (name, args) => c.callTool({ name, arguments: args }) as Promise<CallResult>,
    );
    const progress: unknown[] = [];
    const r = await c.callTool({ name: 'image_convert', arguments: { data: png, format: 'webp' } }, undefined, { onprogress: (p) => void progress.push(p) });
    expect(r.isError).toBeFalsy();
    expect(progress.length).toBeGreaterThan(0);
  }, 120_000);

  it('over stdio: every tool listed and called, progress', async () => {
    const c = new ClientV1({ name: 'legacy', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new StdioV1({ command: process.execPath, args: [bin, 'stdio'], env: stdioEnv(tempDir()), stderr: 'pipe' }));
    await everyTool(
      () => c.listTools(),
      (name, args) => c.callTool({ name, arguments: args }) as Promise<CallResult>,
    );
    const progress: unknown[] = [];
    await c.callTool({ name: 'image_convert', arguments: { data: png, format: 'webp' } }, undefined, { onprogress: (p) => void progress.push(p) });
    expect(progress.length).toBeGreaterThan(0);
  }, 120_000);
});

// ─── raw HTTP: the modern validation ladder and its error codes ─────────────────────────────

const ACCEPT = 'application/json, text/event-stream';
const envelope = (v = MODERN, extra: Record<string, unknown> = {}) => ({
  'io.modelcontextprotocol/protocolVersion': v,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  ...extra,
});

async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const r = await fetch(`${t.url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

/** A well-formed modern request with the matching headers (override any). */
function modern(method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = {}, id: string | number = 1) {
  const h: Record<string, string> = { 'mcp-protocol-version': MODERN, 'mcp-method': method };
  if (typeof params.name === 'string') h['mcp-name'] = params.name;
  return post({ jsonrpc: '2.0', id, method, params: { _meta: envelope(), ...params } }, { ...h, ...headers });
}

describe('modern era over HTTP (raw)', () => {
  it('server/discover: both eras, tools only, long public cache, server info', async () => {
    const r = await modern('server/discover', {}, {}, 'd-1');
    expect(r.status).toBe(200);
    expect(r.json.id).toBe('d-1');
    const res = r.json.result;
    expect(res.resultType).toBe('complete');
    expect(res.supportedVersions).toEqual(expect.arrayContaining([MODERN, '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']));
    expect(res.capabilities).toStrictEqual({ tools: { listChanged: false }, extensions: { 'io.modelcontextprotocol/tasks': {} } }); // the Tasks extension: docs/tasks.md
    expect(typeof res.instructions).toBe('string');
    expect(res.ttlMs).toBe(86_400_000);
    expect(res.cacheScope).toBe('public');
    // The server's icons (issue 31): absolute URLs under PUBLIC_BASE_URL, which serves /icons/.
    const base = t.services.config.publicBaseUrl;
    expect(res._meta[SERVER_INFO_KEY]).toStrictEqual({
      name: 'devtoolbox-mcp',
      version: '0.1.0',
      icons: [
        { src: `${base}/icons/devtoolbox-48.png`, mimeType: 'image/png', sizes: ['48x48'] },
        { src: `${base}/icons/devtoolbox-96.png`, mimeType: 'image/png', sizes: ['96x96'] },
      ],
    });
  });

  it('tools/list and tools/call carry resultType, cache hints and server info; no session id', async () => {
    const list = await modern('tools/list');
    expect(list.json.result).toMatchObject({ resultType: 'complete', ttlMs: 86_400_000, cacheScope: 'public' });
    expect(list.json.result.tools).toHaveLength(t.registry.tools.length);
    expect(list.json.result._meta[SERVER_INFO_KEY].name).toBe('devtoolbox-mcp');
    const call = await modern('tools/call', { name: 'base_convert', arguments: { value: '255' } }, {}, 7);
    expect(call.status).toBe(200);
    expect(call.headers.get('mcp-session-id')).toBeNull();
    expect(call.json.id).toBe(7);
    expect(call.json.result.resultType).toBe('complete');
    expect(call.json.result.structuredContent.hex).toBe('ff');
    expect(call.json.result._meta[SERVER_INFO_KEY].name).toBe('devtoolbox-mcp');
    expect('ttlMs' in call.json.result).toBe(false);
  });

  it('missing or incomplete _meta → 400 -32602 with the request id', async () => {
    const h = { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' };
    for (const params of [undefined, {}, { _meta: {} }, { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } }, { _meta: { 'io.modelcontextprotocol/clientCapabilities': {} } }]) {
      const r = await post({ jsonrpc: '2.0', id: 101, method: 'tools/list', ...(params ? { params } : {}) }, h);
      expect([r.status, r.json.id, r.json.error.code], JSON.stringify(params)).toStrictEqual([400, 101, -32602]);
    }
    // clientInfo is optional
    const r = await post({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} } } }, h);
    expect(r.status).toBe(200);
  });

  it('header/body mismatches → 400 -32020 (after =?base64?…?= decoding); a base64 header that matches is fine', async () => {
    const cases: Array<[string, Record<string, string>]> = [
      ['missing MCP-Protocol-Version', { 'mcp-protocol-version': '' }],
      ['Mcp-Method differs', { 'mcp-method': 'tools/list' }],
      ['Mcp-Method missing', { 'mcp-method': '' }],
      ['Mcp-Name differs', { 'mcp-name': 'html_entity' }],
      ['Mcp-Name missing', { 'mcp-name': '' }],
      ['Mcp-Name base64 of another name', { 'mcp-name': `=?base64?${Buffer.from('html_entity').toString('base64')}?=` }],
      ['Mcp-Name malformed base64', { 'mcp-name': '=?base64?***?=' }],
    ];
    for (const [what, h] of cases) {
      const headers = Object.fromEntries(Object.entries(h).filter(([, v]) => v !== ''));
      const r = await fetch(`${t.url}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: ACCEPT,
          ...(h['mcp-protocol-version'] === '' ? {} : { 'mcp-protocol-version': MODERN }),
          ...(h['mcp-method'] === '' ? {} : { 'mcp-method': 'tools/call' }),
          ...(h['mcp-name'] === '' ? {} : { 'mcp-name': 'base_convert' }),
          ...headers,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'm', method: 'tools/call', params: { name: 'base_convert', arguments: { value: '1' }, _meta: envelope() } }),
      });
      const j = (await r.json()) as any;
      expect([r.status, j.id, j.error?.code], what).toStrictEqual([400, 'm', -32020]);
    }
    // The header carries the body's version; the body names another (unsupported) one: mismatch wins.
    const v = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: envelope('v999') } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' });
    expect([v.status, v.json.error.code]).toStrictEqual([400, -32020]);
    // Non-ASCII name, base64-encoded by the client: decoded before comparing (then: unknown tool).
    const name = 'outil_é';
    const enc = await post(
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name, arguments: {}, _meta: envelope() } },
      { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': `=?base64?${Buffer.from(name).toString('base64')}?=` },
    );
    expect([enc.status, enc.json.error.code, enc.json.error.message]).toStrictEqual([200, -32602, `Unknown tool: ${name}`]);
    const ok = await modern('tools/call', { name: 'base_convert', arguments: { value: '2' } }, { 'mcp-name': `=?base64?${Buffer.from('base_convert').toString('base64')}?=` });
    expect(ok.json.result.structuredContent.dec).toBe('2');
  });

  it('unsupported version → 400 -32022 with {supported, requested}', async () => {
    const r = await post({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: envelope('1900-01-01') } }, { 'mcp-protocol-version': '1900-01-01', 'mcp-method': 'tools/list' });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ id: 5, error: { code: -32022, data: { requested: '1900-01-01' } } });
    expect(r.json.error.data.supported).toContain(MODERN);
    expect(r.json.error.data.supported).toContain('2025-11-25');
  });

  it('unknown and removed methods → 404 -32601 (ping, logging/setLevel, initialize sent the modern way, prompts, resources)', async () => {
    for (const m of ['ping', 'logging/setLevel', 'initialize', 'prompts/list', 'resources/list', 'completion/complete', 'tasks/result', 'no/such']) {
      const r = await modern(m, {}, {}, m);
      expect([r.status, r.json.id, r.json.error.code], m).toStrictEqual([404, m, -32601]);
    }
  });

  it('tools/call params: unknown tool or non-object arguments → -32602 in-band; bad input → isError result', async () => {
    const u = await modern('tools/call', { name: 'no_such_tool', arguments: {} });
    expect([u.status, u.json.error.code, u.json.error.message]).toStrictEqual([200, -32602, 'Unknown tool: no_such_tool']);
    const a = await modern('tools/call', { name: 'base_convert', arguments: 'x' });
    expect([a.status, a.json.error.code]).toStrictEqual([200, -32602]);
    const bad = await modern('tools/call', { name: 'base_convert', arguments: { value: '12z' } });
    expect(bad.json.result.isError).toBe(true);
    expect(bad.json.result.resultType).toBe('complete');
  });

  it('a modern notification is accepted with 202 and no body', async () => {
    const r = await post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope() } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'notifications/cancelled' });
    expect([r.status, r.text]).toStrictEqual([202, '']);
  });

  it('subscriptions/listen: an SSE stream with the acknowledgement (empty filter) then the closing result', async () => {
    const r = await modern('subscriptions/listen', { notifications: { toolsListChanged: true } }, {}, 'sub-1');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const events = r.text
      .split('\n\n')
      .filter((e) => e.startsWith('event: message'))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));
    expect(events).toHaveLength(2);
    expect(events[0]).toStrictEqual({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: {}, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
    });
    expect(events[1]).toMatchObject({ id: 'sub-1', result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } });
  });

  it('progress: notifications on the request’s own SSE stream, then the result', async () => {
    const r = await modern('tools/call', { name: 'image_convert', arguments: { data: png, format: 'webp' }, _meta: envelope(MODERN, { progressToken: 'p-7' }) }, {}, 9);
    expect(r.headers.get('content-type')).toContain('text/event-stream');
    const msgs = r.text
      .split('\n\n')
      .filter(Boolean)
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)));
    const progress = msgs.filter((m) => m.method === 'notifications/progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((m) => m.params.progressToken === 'p-7')).toBe(true);
    expect(msgs.at(-1)).toMatchObject({ id: 9, result: { resultType: 'complete', structuredContent: { format: 'webp' } } });
  });

  it('liberal: a legacy MCP-Protocol-Version header on a modern body is served as modern; other mismatches stay -32020', async () => {
    const ok = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: envelope() } },
      { 'mcp-protocol-version': '2025-06-18', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert' },
    );
    expect(ok.status).toBe(200);
    expect(ok.json.result).toMatchObject({ resultType: 'complete', structuredContent: { hex: 'ff' } });
    const bad = await post(
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope('v999') } },
      { 'mcp-protocol-version': '2025-06-18', 'mcp-method': 'tools/list' },
    );
    expect([bad.status, bad.json.error.code]).toStrictEqual([400, -32020]);
  });

  it('batches are refused under the 2026-07-28 header; GET and DELETE are 405', async () => {
    const r = await post([{ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } }], { 'mcp-protocol-version': MODERN });
    expect([r.status, r.json.error.code]).toStrictEqual([400, -32600]);
    for (const method of ['GET', 'DELETE']) expect((await fetch(`${t.url}/mcp`, { method })).status).toBe(405);
  });

  it('a modern header on a body without the envelope → 400 -32602', async () => {
    const r = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list' }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' });
    expect([r.status, r.json.id, r.json.error.code]).toStrictEqual([400, 4, -32602]);
  });
});

describe('legacy era over HTTP (raw): answers as before, plus issue 20', () => {
  it('serves the legacy revisions the SDK supports (LEGACY_VERSIONS is its list, kept without importing it)', async () => {
    const { SUPPORTED_PROTOCOL_VERSIONS } = await import('@modelcontextprotocol/sdk/types.js');
    const { LEGACY_VERSIONS } = await import('../src/mcp/legacy.js');
    expect(LEGACY_VERSIONS).toStrictEqual(SUPPORTED_PROTOCOL_VERSIONS);
  });

  it('legacy tools/call answers without resultType or _meta, as the SDK did', async () => {
    const r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' } } });
    expect(r.json).toStrictEqual({
      jsonrpc: '2.0',
      id: 3,
      result: {
        content: [{ type: 'text', text: JSON.stringify({ input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' }) }],
        structuredContent: { input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' },
      },
    });
  });

  it('an unsupported MCP-Protocol-Version header → 400 -32022 with {supported, requested}, the id echoed', async () => {
    const r = await post({ jsonrpc: '2.0', id: 8, method: 'tools/list' }, { 'mcp-protocol-version': '1999-01-01' });
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ id: 8, error: { code: -32022, data: { requested: '1999-01-01' } } });
  });

  it('initialize with params {} or none → -32602 with a one-line message (not -32603 with a zod dump), also in a batch', async () => {
    for (const params of [{}, undefined, { protocolVersion: 5 }]) {
      const r = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', ...(params ? { params } : {}) });
      expect([r.status, r.json.id, r.json.error.code], JSON.stringify(params)).toStrictEqual([200, 1, -32602]);
      expect(r.json.error.message).not.toContain('\n');
      expect(r.json.error.message).toMatch(/initialize needs params\.protocolVersion/);
    }
    const b = await post([
      { jsonrpc: '2.0', id: 2, method: 'initialize', params: {} },
      { jsonrpc: '2.0', id: 3, method: 'tools/list' },
    ]);
    const byId = new Map((b.json as Array<{ id: number; error?: { code: number } }>).map((m) => [m.id, m]));
    expect(byId.get(2)?.error?.code).toBe(-32602);
    // A good initialize is the SDK's answer, unchanged.
    const ok = await post({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    expect(ok.json.result).toMatchObject({ protocolVersion: '2025-06-18', serverInfo: { name: 'devtoolbox-mcp' }, capabilities: { tools: { listChanged: false } } });
  });

  it('an unknown API key → 401 with a JSON-RPC error (the request id, "Unknown API key") and WWW-Authenticate: Bearer, both eras', async () => {
    const legacy = await post({ jsonrpc: '2.0', id: 12, method: 'tools/list' }, { authorization: 'Bearer dtb_nope_nope_nope' });
    expect(legacy.status).toBe(401);
    expect(legacy.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(legacy.json).toMatchObject({ jsonrpc: '2.0', id: 12, error: { message: 'Unknown API key' } });
    expect(typeof legacy.json.error.code).toBe('number');
    const mod = await modern('tools/list', {}, { authorization: 'Bearer dtb_nope_nope_nope' }, 'k');
    expect([mod.status, mod.json.id, mod.json.error.message]).toStrictEqual([401, 'k', 'Unknown API key']);
    const c = new ClientV1({ name: 'legacy', version: '1.0.0' });
    await expect(c.connect(new HttpV1(new URL(`${t.url}/mcp`), { requestInit: { headers: { authorization: 'Bearer dtb_nope_nope_nope' } } }))).rejects.toThrow(/Unknown API key/);
  });

  it('body limits per tool: file_process takes the large limit over /mcp (both eras); other tools keep 1 MiB', async () => {
    const rows = Array.from({ length: 60_000 }, (_, i) => `name${i},${i},x`).join('\n');
    const content = `name,age,zip\n${rows}\n`;
    expect(content.length).toBeGreaterThan(1024 * 1024);
    const legacy = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'file_process', arguments: { action: 'analyze', content, format: 'csv' } } });
    expect(legacy.status).toBe(200);
    expect(legacy.json.result.isError, legacy.text.slice(0, 300)).toBeFalsy();
    const mod = await modern('tools/call', { name: 'file_process', arguments: { action: 'analyze', content, format: 'csv' } });
    expect(mod.status).toBe(200);
    expect(mod.json.result.isError, mod.text.slice(0, 300)).toBeFalsy();
    const big = await post({ jsonrpc: '2.0', id: 'big', method: 'tools/call', params: { name: 'base_convert', arguments: { value: content } } });
    expect([big.status, big.json.id, big.json.error.code]).toStrictEqual([413, 'big', -32600]);
  });
});

// ─── stdio (raw): era detection, discover, the lock ────────────────────────────────────────

/** A stdio server with a line reader. */
function launch(dataDir: string): { child: ChildProcessWithoutNullStreams; next(): Promise<any>; send(m: unknown): void; exited: Promise<number | null>; stderr(): string } {
  const child = spawn(process.execPath, [bin, 'stdio'], { env: stdioEnv(dataDir) });
  let buf = '';
  let err = '';
  const lines: string[] = [];
  const waiters: Array<(l: string) => void> = [];
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    for (let i = buf.indexOf('\n'); i !== -1; i = buf.indexOf('\n')) {
      const l = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const w = waiters.shift();
      if (w) w(l);
      else lines.push(l);
    }
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  closers.push(async () => {
    child.kill();
    await exited;
  });
  return {
    child,
    exited,
    stderr: () => err,
    send: (m) => child.stdin.write(`${JSON.stringify(m)}\n`),
    next: () => new Promise((resolve) => (lines.length ? resolve(JSON.parse(lines.shift()!)) : waiters.push((l) => resolve(JSON.parse(l))))),
  };
}

describe('stdio (raw)', () => {
  it('answers server/discover and modern requests before any initialize; legacy after initialize; errors without HTTP', async () => {
    const s = launch(tempDir());
    s.send({ jsonrpc: '2.0', id: 'd', method: 'server/discover', params: { _meta: envelope() } });
    const d = await s.next();
    expect(d.result).toMatchObject({ resultType: 'complete', ttlMs: 86_400_000, cacheScope: 'public' });
    expect(d.result.supportedVersions).toContain(MODERN);
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: envelope() } });
    expect((await s.next()).result).toMatchObject({ resultType: 'complete', structuredContent: { hex: 'ff' } });
    s.send({ jsonrpc: '2.0', id: 3, method: 'ping', params: { _meta: envelope() } });
    expect((await s.next()).error.code).toBe(-32601);
    s.send({ jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: envelope('1900-01-01') } });
    expect((await s.next()).error).toMatchObject({ code: -32022, data: { requested: '1900-01-01' } });
    s.send({ jsonrpc: '2.0', id: 5, method: 'server/discover', params: {} });
    expect((await s.next()).error.code).toBe(-32602);
    s.send({ jsonrpc: '2.0', id: 6, method: 'initialize', params: {} });
    const bad = await s.next();
    expect([bad.id, bad.error.code]).toStrictEqual([6, -32602]);
    s.send({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } });
    expect((await s.next()).result.protocolVersion).toBe('2025-11-25');
    s.send({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' } } });
    const legacy = await s.next();
    expect(legacy.result.structuredContent.hex).toBe('ff');
    expect('resultType' in legacy.result).toBe(false);
    s.child.stdin.end();
    expect(await s.exited).toBe(0);
  }, 60_000);

  it('two launches on one DATA_DIR in quick succession: the second waits for the first to exit, then serves', async () => {
    const dir = tempDir();
    const a = launch(dir);
    a.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope() } });
    await a.next();
    const b = launch(dir);
    setTimeout(() => a.child.stdin.end(), 300);
    b.send({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope() } });
    expect((await b.next()).result.resultType).toBe('complete');
    b.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'cron_task_templates', arguments: {}, _meta: envelope() } });
    expect((await b.next()).result.isError).toBeFalsy();
    expect(await a.exited).toBe(0);
    b.child.stdin.end();
    expect(await b.exited, b.stderr()).toBe(0);
  }, 60_000);
});
