import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toolSchemas } from '../src/json-schema.js';
import { listenTestApp, mcpError, type ListeningApp, tempDir } from './harness.js';
import { jsonWithoutRequestId } from './request-ids.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');

let t: ListeningApp;
beforeAll(async () => {
  t = await listenTestApp();
});
afterAll(async () => {
  await t.close();
});

async function checkClient(client: Client) {
  const { tools } = await client.listTools();
  expect(tools.map((x) => x.name)).toStrictEqual(t.registry.tools.map((x) => x.name));
  for (const tool of tools) {
    const def = t.registry.get(tool.name)!;
    expect(tool.title).toBe(def.title);
    expect(tool.inputSchema).toStrictEqual(toolSchemas(def).input);
    expect(tool.outputSchema).toStrictEqual(toolSchemas(def).output);
    expect(tool.annotations).toMatchObject(def.annotations);
  }
  const ok = await client.callTool({ name: 'base_convert', arguments: { value: '255' } });
  expect(ok.isError).toBeFalsy();
  const want = { input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' };
  expect(ok.structuredContent).toStrictEqual(want);
  expect(ok.content).toStrictEqual([{ type: 'text', text: JSON.stringify(want) }]);

  const bad = await client.callTool({ name: 'base_convert', arguments: { value: '12z' } });
  expect(bad.isError).toBe(true);
  expect(bad.structuredContent).toBeUndefined();
  expect(mcpError(bad)).toStrictEqual({ code: 'PARSE_ERROR', message: 'Invalid dec digit "z" at position 3', details: { position: 3 } });

  const invalid = await client.callTool({ name: 'json_yaml_convert', arguments: { input: 1 } });
  expect(invalid.isError).toBe(true);
  expect(mcpError(invalid).code).toBe('INVALID_INPUT');
  expect(mcpError(invalid).details).toStrictEqual([{ path: 'input', message: 'Invalid input: expected string, received number' }]);

  await expect(client.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/Unknown tool: no_such_tool/);
}

describe('MCP', () => {
  it('in memory: lists the registry and calls tools', async () => {
    await checkClient(await t.mcpClient());
  });

  it('over streamable HTTP: lists the registry and calls tools', async () => {
    await checkClient(await t.httpClient());
  });

  it('over stdio (the built bin): lists and calls tools, nothing but protocol on stdout', async () => {
    expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [bin, 'stdio'],
      env: { ...process.env, DATA_DIR: tempDir(), LOG_LEVEL: 'info' } as Record<string, string>,
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await checkClient(client);
    } finally {
      await client.close();
    }
  });

  it('stdio prints --help on stdout and exits 0', async () => {
    const out = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const p = spawn(process.execPath, [bin, '--help']);
      let stdout = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      p.on('close', (code) => resolve({ code, stdout }));
    });
    expect(out.code).toBe(0);
    for (const v of ['PORT', 'HOST', 'ALLOWED_ORIGINS', 'PUBLIC_BASE_URL', 'DATA_DIR', 'RATE_LIMITS', 'FETCH_ALLOW_PRIVATE', 'FETCH_TIMEOUT_MS', 'FETCH_MAX_BYTES', 'LOG_LEVEL']) {
      expect(out.stdout).toContain(v);
    }
  });

  describe('HTTP transport details', () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const call = (body: unknown, h: Record<string, string> = headers) =>
      fetch(`${t.url}/mcp`, { method: 'POST', headers: h, body: typeof body === 'string' ? body : JSON.stringify(body) });

    it('GET and DELETE /mcp answer 405 with Allow: POST', async () => {
      for (const method of ['GET', 'DELETE']) {
        const r = await fetch(`${t.url}/mcp`, { method });
        expect(r.status).toBe(405);
        expect(r.headers.get('allow')).toBe('POST');
      }
    });

    it('needs no session id (stateless) and answers tools/call without initialize', async () => {
      const r = await call({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '10', from: 'bin' } } });
      expect(r.status).toBe(200);
      expect(r.headers.get('mcp-session-id')).toBeNull();
      const j = (await r.json()) as { id: number; result: { structuredContent: { dec: string } } };
      expect(j.id).toBe(7);
      expect(j.result.structuredContent.dec).toBe('2');
    });

    it('refuses a missing Accept with 406 and a non-JSON body type with 415, as the SDK does', async () => {
      const msg = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
      expect((await call(msg, { 'content-type': 'application/json', accept: 'application/json' })).status).toBe(406);
      expect((await call(msg, { 'content-type': 'text/plain', accept: headers.accept })).status).toBe(415);
    });

    it('answers unparsable JSON with a JSON-RPC parse error', async () => {
      const r = await call('{"jsonrpc":');
      expect(r.status).toBe(400);
      expect(await jsonWithoutRequestId(r)).toStrictEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null });
    });

    it('answers a notification with 202 and a batch through the SDK transport', async () => {
      expect((await call({ jsonrpc: '2.0', method: 'notifications/initialized' })).status).toBe(202);
      const r = await call([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '1' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '2' } } },
      ]);
      expect(r.status).toBe(200);
      const j = (await r.json()) as Array<{ id: number }>;
      expect(j.map((m) => m.id).sort()).toStrictEqual([1, 2]);
    });

    it('keeps concurrent calls with the same JSON-RPC id apart', async () => {
      const rs = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          call({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: String(i) } } }).then(
            (r) => r.json() as Promise<{ result: { structuredContent: { dec: string } } }>,
          ),
        ),
      );
      expect(rs.map((r) => r.result.structuredContent.dec)).toStrictEqual(Array.from({ length: 40 }, (_, i) => String(i)));
    });

    // Regression: these were -32603 Internal error (Protocol's own parse of the strict
    // CallToolRequestSchema threw a bare ZodError before the Server's -32602 check could run).
    it('a tools/call whose arguments is not an object, or whose name is not a string, is -32602 Invalid params, never -32603', async () => {
      const bad = [{ name: 'base_convert', arguments: 'x' }, { name: 'base_convert', arguments: null }, { name: 'base_convert', arguments: [1] }, { name: 5 }, {}];
      for (const params of bad) {
        for (const h of [headers, { ...headers, 'mcp-protocol-version': '2025-06-18' }]) {
          const r = await call({ jsonrpc: '2.0', id: 9, method: 'tools/call', params }, h);
          expect(r.status).toBe(200);
          const j = (await r.json()) as { id: number; error: { code: number; message: string } };
          expect([j.id, j.error.code, j.error.message.startsWith('MCP error -32602: Invalid tools/call request')]).toStrictEqual([9, -32602, true]);
        }
      }
      // In a batch (the SDK transport path) too, next to a good call.
      const r = await call([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: 7 } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '2' } } },
      ]);
      const j = (await r.json()) as Array<{ id: number; error?: { code: number }; result?: { structuredContent: { dec: string } } }>;
      const byId = new Map(j.map((m) => [m.id, m]));
      expect([byId.get(1)?.error?.code, byId.get(2)?.result?.structuredContent.dec]).toStrictEqual([-32602, '2']);
    });

    it('refuses an unsupported MCP-Protocol-Version header', async () => {
      const r = await call({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...headers, 'mcp-protocol-version': '1999-01-01' });
      expect(r.status).toBe(400);
    });

    it('streams progress over SSE when the call carries a progressToken', async () => {
      const r = await call({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '3' }, _meta: { progressToken: 'p1' } } });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toContain('text/event-stream');
      const text = await r.text();
      expect(text).toContain('"structuredContent"');
    });
  });
});
