// Issue 35: file_process's transform on REST over a real socket and on MCP in both eras (SDK
// v1 client, legacy; SDK v2 client pinned to 2026-07-28). It runs where file_process runs: the
// worker pool.
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { mcpError, useListeningApp } from './harness.js';

const t = useListeningApp();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
});

const CSV = 'city,temp\nOslo,3\nRome,18\nOslo,5\nLima,18\n';
const INPUT = {
  action: 'transform',
  content: CSV,
  steps: [
    { op: 'group', keys: ['city'], aggregates: [{ op: 'mean', column: 'temp', as: 'avg' }] },
    { op: 'sort', keys: [{ column: 'avg', direction: 'desc' }, { column: 'city' }] },
  ],
  to: 'json',
};
// Oslo (3 + 5) / 2 = 4; Rome 18; Lima 18 — ties broken by city.
const OUT = {
  action: 'transform',
  from: 'csv',
  to: 'json',
  columns: ['city', 'avg'],
  content: JSON.stringify([{ city: 'Lima', avg: 18 }, { city: 'Rome', avg: 18 }, { city: 'Oslo', avg: 4 }], null, 2) + '\n',
  rowCount: 3,
};

describe('transform over REST', () => {
  it('answers on /api/file-process and the uniform path', async () => {
    for (const p of ['/api/file-process', '/api/tools/file_process']) {
      const res = await fetch(`${t.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(INPUT) });
      expect(res.status, p).toBe(200);
      expect(await res.json()).toStrictEqual({ success: true, ...OUT });
    }
  });

  it('answers 422 naming the step for a column the content lacks', async () => {
    const res = await fetch(`${t.url}/api/file-process`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...INPUT, steps: [{ op: 'filter', column: 'town', operator: 'eq', value: 'Oslo' }] }),
    });
    expect(res.status).toBe(422);
    expect(await res.json()).toMatchObject({ success: false, error: { code: 'PARSE_ERROR', details: { step: 0, path: 'steps.0.column' } } });
  });
});

describe('transform over MCP', () => {
  it('SDK v1 client (legacy era)', async () => {
    const c = new ClientV1({ name: 'legacy', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${t.url}/mcp`)));
    const r = await c.callTool({ name: 'file_process', arguments: INPUT });
    expect(r.structuredContent).toStrictEqual(OUT);
    const bad = await c.callTool({ name: 'file_process', arguments: { ...INPUT, steps: [{ op: 'group', aggregates: [{ op: 'sum', column: 'city' }] }] } });
    expect(bad.isError).toBe(true);
    expect(mcpError(bad)).toMatchObject({ code: 'PARSE_ERROR', details: { step: 0, row: 1, column: 'city' } });
  });

  it('SDK v2 client pinned to 2026-07-28', async () => {
    const c = new ClientV2({ name: 'modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp`)));
    expect(c.getProtocolEra()).toBe('modern');
    const r = await c.callTool({ name: 'file_process', arguments: INPUT });
    expect(r.structuredContent).toStrictEqual(OUT);
  });
});
