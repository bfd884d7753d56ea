/**
 * MCP `icons` (2025-11-25 and later, issue 31): the server's on its Implementation (legacy
 * initialize, server/discover), each tool's family icon in tools/list — absolute URLs under
 * PUBLIC_BASE_URL, which serves them. The SDK path and our own dispatch answer the same bytes;
 * a server without /icons/ (stdio) names none.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { describe, expect, it } from 'vitest';
import { mcpIcons } from '../src/docs/icons.js';
import { implementation, listing } from '../src/mcp/answers.js';
import { McpFactory } from '../src/mcp/server.js';
import { createRegistry } from '../src/tools/index.js';
import { SERVER_INFO } from '../src/version.js';
import { tempDir, useTestApp } from './harness.js';

const root = path.join(import.meta.dirname, '..');

const MCP_HEADERS = { accept: 'application/json, text/event-stream' };
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';

/** The raw answer of an SDK server to one request, over an in-memory pair. */
async function ask(server: Server, message: JSONRPCMessage): Promise<JSONRPCMessage> {
  const [ours, theirs] = InMemoryTransport.createLinkedPair();
  await server.connect(ours);
  const answer = new Promise<JSONRPCMessage>((resolve) => (theirs.onmessage = resolve));
  await theirs.start();
  await theirs.send(message);
  const got = await answer;
  await server.close();
  return got;
}

describe('MCP icons over HTTP', () => {
  const t = useTestApp();
  const base = () => t.services.config.publicBaseUrl;
  const sdkServer = () =>
    new McpFactory({ registry: t.registry, calls: t.calls, iconBaseUrl: base() }).create({ caller: { keyId: null, ip: 'memory', transport: 'memory' }, headers: undefined });
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'probe', version: '1' } } } as const;

  it('legacy initialize: serverInfo carries the server icon at both sizes, as the stock SDK server answers it', async () => {
    const res = await t.request('POST', '/mcp', initialize, MCP_HEADERS);
    const body = (await res.json()) as { result: { serverInfo: unknown } };
    const icons = [
      { src: `${base()}/icons/devtoolbox-48.png`, mimeType: 'image/png', sizes: ['48x48'] },
      { src: `${base()}/icons/devtoolbox-96.png`, mimeType: 'image/png', sizes: ['96x96'] },
    ];
    expect(body.result.serverInfo).toStrictEqual({ ...SERVER_INFO, icons });
    const stock = new Server({ ...implementation(base()) }, { capabilities: { tools: { listChanged: false } }, instructions: t.registry.instructions });
    expect(await ask(sdkServer(), initialize)).toStrictEqual(await ask(stock, initialize));
    expect(body).toStrictEqual(await ask(stock, initialize));
  });

  it('legacy tools/list: each tool names its family icon; our fast path answers the SDK server’s bytes', async () => {
    const list = { jsonrpc: '2.0', id: 7, method: 'tools/list' } as const;
    const text = await (await t.request('POST', '/mcp', list, MCP_HEADERS)).text();
    expect(text).toBe(JSON.stringify(await ask(sdkServer(), list)));
    const tools = (JSON.parse(text) as { result: { tools: Array<{ name: string; icons: unknown }> } }).result.tools;
    expect(tools).toHaveLength(t.registry.tools.length);
    for (const tool of tools) {
      const family = t.registry.groupOf(t.registry.get(tool.name)!).name;
      expect(tool.icons, tool.name).toStrictEqual(mcpIcons(base(), family, [96]));
    }
    // A tool names its family's icon at the larger size only (every tool repeats it in tools/list).
    expect(tools.find((x) => x.name === 'qrcode_generate')!.icons).toStrictEqual([{ src: `${base()}/icons/media-96.png`, mimeType: 'image/png', sizes: ['96x96'] }]);
  });

  it('2026-07-28: tools/list names the same icons, discover the server’s; a tool call’s serverInfo stays {name, version}', async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const modern = async (method: string, params: Record<string, unknown> = {}) => {
      const headers: Record<string, string> = { ...MCP_HEADERS, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method };
      if (typeof params.name === 'string') headers['mcp-name'] = params.name;
      const res = await t.request('POST', '/mcp', { jsonrpc: '2.0', id: 1, method, params: { _meta: meta, ...params } }, headers);
      return ((await res.json()) as { result: Record<string, any> }).result;
    };
    expect((await modern('tools/list')).tools).toStrictEqual(listing(t.registry, base()));
    expect((await modern('server/discover'))._meta[SERVER_INFO_KEY]).toStrictEqual(implementation(base()));
    const call = await modern('tools/call', { name: 'base_convert', arguments: { value: '255' } });
    expect(call._meta[SERVER_INFO_KEY]).toStrictEqual(SERVER_INFO);
  });

  it('every icon URL it names is served by this server as a PNG', async () => {
    const urls = new Set([...implementation(base()).icons!, ...listing(t.registry, base()).flatMap((x) => x.icons as Array<{ src: string }>)].map((i) => i.src));
    // The server icon at both sizes, each family's at 96 px.
    expect(urls.size).toBe(2 + t.registry.groups.length);
    for (const src of urls) {
      expect(src.startsWith(`${base()}/icons/`), src).toBe(true);
      const res = await t.request('GET', new URL(src).pathname);
      expect([res.status, res.headers.get('content-type')], src).toStrictEqual([200, 'image/png']);
    }
  });
});

describe('MCP icons where no /icons/ is served (stdio)', () => {
  it('the listing and the Implementation name none', () => {
    expect(listing(createRegistry()).filter((x) => 'icons' in x)).toStrictEqual([]);
    expect(implementation()).toStrictEqual(SERVER_INFO);
  });

  it('a stdio server answers initialize and tools/list without icons', async () => {
    expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
    const child = spawn(process.execPath, ['bin/devtoolbox.js', 'stdio'], { cwd: root, env: { ...process.env, DATA_DIR: tempDir('dtb-icons-'), LOG_LEVEL: 'error' } });
    const lines = readline.createInterface({ input: child.stdout });
    const answers: string[] = [];
    const two = new Promise<void>((resolve) => lines.on('line', (l) => answers.push(l) === 2 && resolve()));
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'probe', version: '1' } } })}\n`);
    child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })}\n`);
    await two;
    child.kill();
    const [init, list] = answers.map((a) => JSON.parse(a) as { result: Record<string, any> });
    expect(init!.result.serverInfo).toStrictEqual(SERVER_INFO);
    expect(list!.result.tools).toHaveLength(createRegistry().tools.length);
    expect(answers[1]).not.toContain('"icons"');
  });
});
