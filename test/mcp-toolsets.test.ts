// Issue 34, toolsets: a client lists only the families (and tools) it chose, with the SDK v1
// (legacy) and v2 (2026-07-28) clients over HTTP (query and header) and stdio (--toolsets); a
// call outside the selection is the unknown-tool error; an unknown name is a 400 / a refusal.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { choose, SelectionCache } from '../src/mcp/toolsets.js';
import { listenTestApp, startTestApp, tempDir, type ListeningApp } from './harness.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');
const MODERN = '2026-07-28';

let t: ListeningApp;
const closers: Array<() => Promise<unknown>> = [];
beforeAll(async () => {
  expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
  t = await listenTestApp();
});
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
  await t.close();
});

/** The tools of these families, in registry order. */
function toolsOf(...families: string[]): string[] {
  return t.registry.groups.filter((g) => families.includes(g.name)).flatMap((g) => g.tools.map((x) => x.name));
}

function stdioEnv(): Record<string, string> {
  return { ...(process.env as Record<string, string>), DATA_DIR: tempDir(), LOG_LEVEL: 'warn', RATE_LIMITS: 'off' };
}

type Lister = { listTools(): Promise<{ tools: Array<{ name: string }> }>; callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown> };

/** Lists exactly `expected`; a tool in it is called; base_convert (formatting), when outside, is an unknown tool. */
async function selected(c: Lister, expected: string[]): Promise<void> {
  const { tools } = await c.listTools();
  expect(tools.map((x) => x.name)).toStrictEqual(expected);
  expect(expected).not.toContain('base_convert');
  await expect(c.callTool({ name: 'base_convert', arguments: { value: '255' } })).rejects.toThrow(/Unknown tool: base_convert/);
}

describe('choosing', () => {
  it('a selection is the union of toolsets and tools, keyed by its tool names in registry order', () => {
    const a = choose(t.registry, ['seo'], ['url_shorten']);
    const b = choose(t.registry, [], ['url_shorten', ...toolsOf('seo').reverse()]);
    expect(a && 'key' in a && a.names).toStrictEqual(t.registry.tools.map((x) => x.name).filter((n) => [...toolsOf('seo'), 'url_shorten'].includes(n)));
    expect(a && 'key' in a && a.key).toBe(b && 'key' in b && b.key);
    expect(choose(t.registry, [], [])).toBeUndefined();
    const bad = choose(t.registry, ['seo', 'nope'], ['nah']);
    expect(bad && 'error' in bad && bad.unknown).toStrictEqual(['nope', 'nah']);
  });

  it('the cache builds each distinct selection once and holds at most its bound', () => {
    let built = 0;
    const cache = new SelectionCache((names) => ({ names, n: ++built }), 2);
    const sel = (key: string) => ({ names: [key], key });
    expect(cache.get(sel('a'))).toBe(cache.get(sel('a')));
    cache.get(sel('b'));
    cache.get(sel('c'));
    expect(built).toBe(3);
    expect(cache.size).toBe(2);
    cache.get(sel('a')); // evicted: built again (b goes)
    expect(built).toBe(4);
    cache.get(sel('c')); // used last: a goes next, c stays
    cache.get(sel('d'));
    cache.get(sel('c'));
    expect(built).toBe(5);
  });
});

describe('SDK v2 client (2026-07-28)', () => {
  it('over HTTP with ?toolsets=: only those families; a call outside is an unknown tool', async () => {
    const c = new ClientV2({ name: 'sel', version: '0.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp?toolsets=seo,media`)));
    expect(c.getProtocolEra()).toBe('modern');
    await selected(c, toolsOf('media', 'seo').sort((x, y) => t.registry.tools.findIndex((z) => z.name === x) - t.registry.tools.findIndex((z) => z.name === y)));
    const r = (await c.callTool({ name: 'meta_extract', arguments: { url: `${t.url}/`, format: 'full' } })) as { content: unknown };
    expect(Array.isArray(r.content)).toBe(true);
  }, 60_000);

  it('over HTTP with X-MCP-Toolsets and X-MCP-Tools: the union', async () => {
    const c = new ClientV2({ name: 'sel', version: '0.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp`), { requestInit: { headers: { 'X-MCP-Toolsets': 'seo', 'X-MCP-Tools': 'url_shorten' } } }));
    const names = new Set([...toolsOf('seo'), 'url_shorten']);
    await selected(c, t.registry.tools.map((x) => x.name).filter((n) => names.has(n)));
  }, 60_000);

  it('over stdio with --toolsets', async () => {
    const c = new ClientV2({ name: 'sel', version: '0.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    closers.push(() => c.close());
    await c.connect(new StdioV2({ command: process.execPath, args: [bin, 'stdio', '--toolsets', 'seo'], env: stdioEnv(), stderr: 'pipe' }));
    expect(c.getProtocolEra()).toBe('modern');
    await selected(c, toolsOf('seo'));
  }, 60_000);
});

describe('SDK v1 client (legacy era)', () => {
  it('over HTTP with ?toolsets=', async () => {
    const c = new ClientV1({ name: 'sel', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${t.url}/mcp?toolsets=seo`)));
    await selected(c, toolsOf('seo'));
  }, 60_000);

  it('over HTTP with X-MCP-Toolsets', async () => {
    const c = await t.httpClient({ 'X-MCP-Toolsets': 'media' });
    await selected(c, toolsOf('media'));
  }, 60_000);

  it('over stdio with --toolsets', async () => {
    const c = new ClientV1({ name: 'sel', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new StdioV1({ command: process.execPath, args: [bin, 'stdio', '--toolsets=seo,media'], env: stdioEnv(), stderr: 'pipe' }));
    const names = new Set(toolsOf('seo', 'media'));
    await selected(c, t.registry.tools.map((x) => x.name).filter((n) => names.has(n)));
  }, 60_000);
});

// ─── raw: errors and cache hints ────────────────────────────────────────────────────────────

const envelope = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
};

async function post(query: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const r = await fetch(`${t.url}/mcp${query}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: JSON.parse(await r.text()) };
}

const modernList = (query: string, headers: Record<string, string> = {}) =>
  post(query, { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: envelope } }, { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list', ...headers });

describe('raw HTTP', () => {
  it('an unknown toolset or tool: 400 -32602 naming the unknown and the valid names, both eras', async () => {
    for (const r of [
      await modernList('?toolsets=seo,nope'),
      await post('', { jsonrpc: '2.0', id: 7, method: 'tools/list' }, { 'x-mcp-tools': 'nah' }),
    ]) {
      expect(r.status).toBe(400);
      expect(r.json.id).toBe(7);
      expect(r.json.error.code).toBe(-32602);
      expect(r.json.error.data.valid.toolsets).toStrictEqual(t.registry.groups.map((g) => g.name));
      expect(r.json.error.data.valid.tools).toStrictEqual(t.registry.tools.map((x) => x.name));
    }
    expect((await modernList('?toolsets=seo,nope')).json.error.data.unknown).toStrictEqual(['nope']);
    expect((await modernList('?toolsets=seo,nope')).json.error.message).toMatch(/nope.*Toolsets: .*seo/);
  });

  it('a selected list is cached privately; the default list stays public', async () => {
    const sel = await modernList('', { 'x-mcp-toolsets': 'seo' });
    expect(sel.json.result).toMatchObject({ ttlMs: 86_400_000, cacheScope: 'private' });
    expect(sel.json.result.tools.map((x: { name: string }) => x.name)).toStrictEqual(toolsOf('seo'));
    expect((await modernList('?toolsets=seo')).json.result.cacheScope).toBe('private');
    const all = await modernList('');
    expect(all.json.result.cacheScope).toBe('public');
    expect(all.json.result.tools).toHaveLength(t.registry.tools.length);
  });

  it('every toolset named: the default answer, byte for byte', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const a = await fetch(`${t.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(body) });
    const b = await fetch(`${t.url}/mcp?toolsets=${t.registry.groups.map((g) => g.name).join(',')}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify(body),
    });
    expect(await b.text()).toBe(await a.text());
  });

  it('/api/tools is unaffected', async () => {
    const r = await fetch(`${t.url}/api/tools?toolsets=seo`, { headers: { 'x-mcp-toolsets': 'seo' } });
    const json = (await r.json()) as { tools: unknown[] };
    expect(json.tools).toHaveLength(t.registry.tools.length);
  });
});

describe('stdio', () => {
  it('an unknown toolset: the process refuses to start, naming it on stderr', () => {
    const r = spawnSync(process.execPath, [bin, 'stdio', '--toolsets', 'seo,nope'], { env: stdioEnv(), input: '', encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/Unknown toolset or tool: nope\. Toolsets: .*seo/);
  });

  it('TOOLSETS sets the default; an unknown one refuses to start', async () => {
    const bad = spawnSync(process.execPath, [bin, 'stdio'], { env: { ...stdioEnv(), TOOLSETS: 'nope' }, input: '', encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/TOOLSETS: Unknown toolset or tool: nope/);
    const c = new ClientV1({ name: 'sel', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new StdioV1({ command: process.execPath, args: [bin, 'stdio'], env: { ...stdioEnv(), TOOLSETS: 'seo' }, stderr: 'pipe' }));
    await selected(c, toolsOf('seo'));
  }, 60_000);
});

describe('TOOLSETS over HTTP', () => {
  it('sets the default list; a client may still choose any toolset, or all; an unknown one stops start-up', async () => {
    const h = await listenTestApp({ env: { TOOLSETS: 'seo' } });
    closers.push(() => h.close());
    const names = async (query: string) => {
      const r = await fetch(`${h.url}/mcp${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      return ((await r.json()) as { result: { tools: Array<{ name: string }> } }).result.tools.map((x) => x.name);
    };
    expect(await names('')).toStrictEqual(toolsOf('seo'));
    expect(await names('?toolsets=media')).toStrictEqual(toolsOf('media'));
    expect(await names(`?toolsets=${t.registry.groups.map((g) => g.name).join(',')}`)).toStrictEqual(t.registry.tools.map((x) => x.name));
    await expect(startTestApp({ env: { TOOLSETS: 'seo,nope' } })).rejects.toThrow(/TOOLSETS: Unknown toolset or tool: nope/);
  }, 60_000);
});
