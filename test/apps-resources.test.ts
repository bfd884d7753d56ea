/**
 * Issue 31, protocol: the MCP Apps views as resources in both eras, over HTTP and stdio, with the
 * SDK v1 and v2 clients. A client that declares the extension (`io.modelcontextprotocol/ui`
 * with our MIME type) sees the capability, the tools' `_meta.ui.resourceUri` and the resources;
 * every URI named resolves to a self-contained HTML document; tool results are the same either way.
 * Needs `npm run build` (dist/views and the stdio server).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_MIME, UI_EXTENSION } from '../src/mcp/resources.js';
import { VIEWS, VIEWS_DIR } from '../src/views/index.js';
import { listenTestApp, tempDir, type ListeningApp } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');
const MODERN = '2026-07-28';
const UI_CAPS = { extensions: { [UI_EXTENSION]: { mimeTypes: [APP_MIME] } } };
/** The views built (dist/views): what the server serves. */
const built = () => VIEWS.filter((v) => fs.existsSync(path.join(VIEWS_DIR, `${v.name}.html`)));

let t: ListeningApp;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
  expect(built().length, 'run `npm run build` first: it builds dist/views').toBeGreaterThan(0);
  t = await listenTestApp();
});
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await t.close();
});

type Tool = { name: string; _meta?: { ui?: { resourceUri?: string } } };
type Lister = {
  listTools(): Promise<{ tools: Tool[] }>;
  listResources(): Promise<{ resources: Array<{ uri: string; mimeType?: string; name: string; _meta?: unknown }> }>;
  readResource(p: { uri: string }): Promise<{ contents: Array<{ uri: string; mimeType?: string; text?: string; _meta?: unknown }> }>;
  callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
};

/** The tools that name a view, as the registry declares them (and as built). */
function expectedViews(): Record<string, string> {
  const have = new Set(built().map((v) => v.name));
  const out: Record<string, string> = {};
  for (const tool of t.registry.tools) if (tool.view && have.has(tool.view)) out[tool.name] = `ui://devtoolbox/${tool.view}`;
  return out;
}

/** A declaring client: each tool with a view names it; every named URI reads back as the built HTML. */
async function checkDeclared(c: Lister): Promise<void> {
  const { tools } = await c.listTools();
  const named = Object.fromEntries(tools.filter((x) => x._meta?.ui?.resourceUri).map((x) => [x.name, x._meta!.ui!.resourceUri!]));
  expect(named).toStrictEqual(expectedViews());
  expect(named.qrcode_generate).toBe('ui://devtoolbox/qrcode');
  const { resources } = await c.listResources();
  expect(resources.map((r) => r.uri).sort()).toStrictEqual([...new Set(Object.values(named))].sort());
  for (const r of resources) {
    expect(r.mimeType).toBe(APP_MIME);
    expect(r._meta).toStrictEqual({ ui: { csp: { connectDomains: [], resourceDomains: [] }, prefersBorder: true } });
  }
  for (const uri of new Set(Object.values(named))) {
    const read = await c.readResource({ uri });
    expect(read.contents).toHaveLength(1);
    const [content] = read.contents;
    expect([content!.uri, content!.mimeType]).toStrictEqual([uri, APP_MIME]);
    expect(content!.text).toBe(fs.readFileSync(path.join(VIEWS_DIR, `${uri.slice('ui://devtoolbox/'.length)}.html`), 'utf8'));
    expect(content!.text!.startsWith('<!doctype html>')).toBe(true);
  }
  await expect(c.readResource({ uri: 'ui://devtoolbox/nope' })).rejects.toThrow(/Resource not found: ui:\/\/devtoolbox\/nope/);
}

/** The same call through a client that renders Apps and one that does not: the same result. */
async function sameResults(a: Lister, b: Lister): Promise<void> {
  for (const [name, args] of [
    ['qrcode_generate', { content: 'same result', format: 'svg', size: 128 }],
    ['base_convert', { value: '255' }],
  ] as const) {
    expect(await a.callTool({ name, arguments: { ...args } })).toStrictEqual(await b.callTool({ name, arguments: { ...args } }));
  }
}

function stdioEnv(): Record<string, string> {
  return { ...(process.env as Record<string, string>), DATA_DIR: tempDir('dtb-apps-'), LOG_LEVEL: 'warn', RATE_LIMITS: 'off' };
}

function v1(declare: boolean): ClientV1 {
  const c = new ClientV1({ name: 'apps-v1', version: '1.0.0' }, declare ? { capabilities: UI_CAPS } : undefined);
  closers.push(() => c.close());
  return c;
}

function v2(declare: boolean): ClientV2 {
  const c = new ClientV2({ name: 'apps-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } }, ...(declare ? { capabilities: UI_CAPS } : {}) });
  closers.push(() => c.close());
  return c;
}

describe('legacy era (SDK v1 client)', () => {
  it('over HTTP: a declaring client gets the capability, views and resources; a plain one the initialize it always got', async () => {
    const apps = v1(true);
    await apps.connect(new HttpV1(new URL(`${t.url}/mcp`)));
    expect(apps.getServerCapabilities()).toStrictEqual({ tools: { listChanged: false }, resources: { listChanged: false }, extensions: { [UI_EXTENSION]: {} } });
    await checkDeclared(apps as unknown as Lister);
    const plain = v1(false);
    const plainTransport = new HttpV1(new URL(`${t.url}/mcp`));
    await plain.connect(plainTransport);
    expect(plain.getServerCapabilities()).toStrictEqual({ tools: { listChanged: false } });
    // The plain client: no session id issued, no _meta.ui (exactly the list it always got).
    expect(plainTransport.sessionId).toBeUndefined();
    const { tools } = await plain.listTools();
    expect(tools.filter((x) => '_meta' in x)).toStrictEqual([]);
    await sameResults(apps as unknown as Lister, plain as unknown as Lister);
  }, 60_000);

  it('over HTTP: the declaration travels in the session id initialize issued; a forged id is 404', async () => {
    const transport = new HttpV1(new URL(`${t.url}/mcp`));
    const apps = v1(true);
    await apps.connect(transport);
    const sid = transport.sessionId;
    expect(sid).toMatch(/^ui1\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{22}$/);
    const listed = async (base: string, session?: string, accept = 'application/json, text/event-stream') => {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept, 'mcp-protocol-version': '2025-11-25', ...(session ? { 'mcp-session-id': session } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/list' }),
      });
      return { status: res.status, body: (await jsonWithoutRequestId(res)) as { result?: { tools: Tool[] }; error?: { code: number; message: string } } };
    };
    const views = (r: Awaited<ReturnType<typeof listed>>) => (r.body.result?.tools ?? []).filter((x) => x._meta?.ui).map((x) => x.name).sort();
    const want = Object.keys(expectedViews()).sort();
    expect(views(await listed(t.url, sid))).toStrictEqual(want);
    expect(views(await listed(t.url))).toStrictEqual([]);
    // The SDK's own path (a request with a progress token is the SDK's) agrees with our fast path.
    const viaSdk = async (session?: string) => {
      const res = await fetch(`${t.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(session ? { 'mcp-session-id': session } : {}) },
        body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/list', params: { _meta: { progressToken: 1 } } }),
      });
      const text = await res.text();
      const data = text.startsWith('{') ? text : text.split('\n').find((l) => l.startsWith('data: '))!.slice(6);
      return (JSON.parse(data) as { result: { tools: Tool[] } }).result.tools.filter((x) => x._meta?.ui).map((x) => x.name).sort();
    };
    expect(await viaSdk(sid)).toStrictEqual(want);
    expect(await viaSdk()).toStrictEqual([]);
    // A forged id, or one altered by a character: 404, the SDK's "Session not found"; initialize is exempt.
    const forged = `${sid!.slice(0, -1)}${sid!.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [forged, 'ui1.x.y', 'some-other-servers-session']) {
      const r = await listed(t.url, bad);
      expect([r.status, r.body.error]).toStrictEqual([404, { code: -32001, message: 'Session not found' }]);
    }
    const reinit = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': forged },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: UI_CAPS, clientInfo: { name: 'x', version: '1' } } }),
    });
    expect(reinit.status).toBe(200);
    expect(reinit.headers.get('mcp-session-id')).toMatch(/^ui1\./);
    expect(reinit.headers.get('mcp-session-id')).not.toBe(sid);
  }, 60_000);

  it('over stdio: the session remembers what initialize declared; a plain client sees no _meta.ui', async () => {
    const apps = v1(true);
    await apps.connect(new StdioV1({ command: process.execPath, args: [bin, 'stdio'], env: stdioEnv(), stderr: 'pipe' }));
    expect(apps.getServerCapabilities()).toMatchObject({ resources: { listChanged: false }, extensions: { [UI_EXTENSION]: {} } });
    await checkDeclared(apps as unknown as Lister);
    const plain = v1(false);
    await plain.connect(new StdioV1({ command: process.execPath, args: [bin, 'stdio'], env: stdioEnv(), stderr: 'pipe' }));
    expect(plain.getServerCapabilities()).toStrictEqual({ tools: { listChanged: false } });
    const { tools } = await plain.listTools();
    expect(tools.filter((x) => '_meta' in x)).toStrictEqual([]);
    await sameResults(apps as unknown as Lister, plain as unknown as Lister);
  }, 60_000);
});

describe('2026-07-28 (SDK v2 client)', () => {
  for (const kind of ['http', 'stdio'] as const) {
    it(`over ${kind}: a declaring client gets views and resources (with cache hints); a plain one none`, async () => {
      const transport = () =>
        kind === 'http' ? new HttpV2(new URL(`${t.url}/mcp`)) : new StdioV2({ command: process.execPath, args: [bin, 'stdio'], env: stdioEnv(), stderr: 'pipe' });
      const apps = v2(true);
      await apps.connect(transport());
      expect(apps.getProtocolEra()).toBe('modern');
      await checkDeclared(apps as unknown as Lister);
      const plain = v2(false);
      await plain.connect(transport());
      const { tools } = await plain.listTools();
      expect(tools.filter((x) => '_meta' in x && (x._meta as Record<string, unknown>).ui !== undefined)).toStrictEqual([]);
      await sameResults(apps as unknown as Lister, plain as unknown as Lister);
    }, 60_000);
  }
});

describe('2026-07-28 over HTTP (raw): the ladder and the cache hints', () => {
  const meta = (caps: object) => ({ 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': caps });
  async function post(method: string, params: Record<string, unknown>, caps: object, headers: Record<string, string> = {}) {
    const res = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method, ...headers },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta(caps) } }),
    });
    return { status: res.status, json: (await jsonWithoutRequestId(res)) as { result?: Record<string, any>; error?: { code: number; message: string; data?: unknown } } };
  }

  it('discover advertises resources and the extension to a declaring request only', async () => {
    const d = await post('server/discover', {}, UI_CAPS);
    expect(d.json.result!.capabilities).toStrictEqual({
      tools: { listChanged: false },
      resources: { listChanged: false },
      extensions: { 'io.modelcontextprotocol/tasks': {}, [UI_EXTENSION]: {} },
    });
    // The extension needs our MIME type in mimeTypes, as the extension requires.
    const other = await post('server/discover', {}, { extensions: { [UI_EXTENSION]: { mimeTypes: ['text/html'] } } });
    expect(other.json.result!.capabilities).toStrictEqual({ tools: { listChanged: false }, extensions: { 'io.modelcontextprotocol/tasks': {} } });
  });

  it('resources/list and resources/read carry resultType, ttlMs and cacheScope; unknown URI → -32602 with the uri', async () => {
    const list = await post('resources/list', {}, UI_CAPS);
    expect(list.status).toBe(200);
    expect(list.json.result).toMatchObject({ resultType: 'complete', ttlMs: 86_400_000, cacheScope: 'public' });
    const read = await post('resources/read', { uri: 'ui://devtoolbox/qrcode' }, UI_CAPS, { 'mcp-name': 'ui://devtoolbox/qrcode' });
    expect(read.json.result).toMatchObject({ resultType: 'complete', ttlMs: 86_400_000, cacheScope: 'public', contents: [{ uri: 'ui://devtoolbox/qrcode', mimeType: APP_MIME }] });
    const missing = await post('resources/read', { uri: 'ui://devtoolbox/x' }, UI_CAPS, { 'mcp-name': 'ui://devtoolbox/x' });
    expect([missing.status, missing.json.error]).toStrictEqual([200, { code: -32602, message: 'Resource not found: ui://devtoolbox/x', data: { uri: 'ui://devtoolbox/x' } }]);
  });

  it('resources/read: Mcp-Name must be the uri (-32020); a uri that is not a string → -32602; an undeclared request → 404 -32601', async () => {
    const noName = await post('resources/read', { uri: 'ui://devtoolbox/qrcode' }, UI_CAPS);
    expect([noName.status, noName.json.error!.code]).toStrictEqual([400, -32020]);
    const wrong = await post('resources/read', { uri: 'ui://devtoolbox/qrcode' }, UI_CAPS, { 'mcp-name': 'ui://devtoolbox/seo' });
    expect([wrong.status, wrong.json.error!.code]).toStrictEqual([400, -32020]);
    const bad = await post('resources/read', { uri: 7 }, UI_CAPS, { 'mcp-name': '7' });
    expect([bad.status, bad.json.error!.code]).toStrictEqual([200, -32602]);
    for (const m of ['resources/list', 'resources/read']) {
      const r = await post(m, { uri: 'ui://devtoolbox/qrcode' }, {}, { 'mcp-name': 'ui://devtoolbox/qrcode' });
      expect([r.status, r.json.error!.code], m).toStrictEqual([404, -32601]);
    }
  });
});
