/**
 * Issue 31: a legacy HTTP session id carries the MCP Apps declaration without shared session
 * state. Two instances on one Redis (a scaled-out server): an id one issued is recognised by the
 * other, whose tools/list then names the views; an id signed by another store's key is 404.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { APP_MIME, UI_EXTENSION } from '../src/mcp/resources.js';
import { listenTestApp, type ListeningApp } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const UI_CAPS = { extensions: { [UI_EXTENSION]: { mimeTypes: [APP_MIME] } } };
type Tool = { name: string; _meta?: { ui?: unknown } };

let redis: TestRedis | undefined;
afterAll(async () => {
  await redis?.stop();
});

/** tools/list over raw HTTP with a session id: its status and the names of the tools that name a view. */
async function viewsListed(base: string, session: string): Promise<{ status: number; views: string[] }> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  const body = (await res.json()) as { result?: { tools: Tool[] } };
  return { status: res.status, views: (body.result?.tools ?? []).filter((x) => x._meta?.ui).map((x) => x.name).sort() };
}

describeRedis('MCP Apps sessions across instances (issue 31)', () => {
  let a: ListeningApp;
  let b: ListeningApp;
  let alone: ListeningApp;
  beforeAll(async () => {
    redis = await startRedis();
    const prefix = redis.prefix();
    a = await listenTestApp({ env: { REDIS_URL: redis.url, REDIS_PREFIX: prefix } });
    b = await listenTestApp({ env: { REDIS_URL: redis.url, REDIS_PREFIX: prefix } });
    // Another deployment (another store, so another key).
    alone = await listenTestApp({ env: { REDIS_URL: redis.url, REDIS_PREFIX: redis.prefix() } });
  });
  afterAll(async () => {
    for (const x of [a, b, alone]) await x?.close();
  });

  it('an id issued by one instance names the views on the other; another store\'s instance answers 404', async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${a.url}/mcp`));
    const client = new Client({ name: 'apps-session', version: '1.0.0' }, { capabilities: UI_CAPS });
    await client.connect(transport);
    const sid = transport.sessionId!;
    expect(sid).toMatch(/^ui1\./);
    const want = a.registry.tools.filter((t) => t.view !== undefined).map((t) => t.name).sort();
    expect(want.length).toBeGreaterThan(0);
    expect(await viewsListed(a.url, sid)).toStrictEqual({ status: 200, views: want });
    expect(await viewsListed(b.url, sid)).toStrictEqual({ status: 200, views: want });
    expect(await viewsListed(alone.url, sid)).toStrictEqual({ status: 404, views: [] });
    // The SDK client's own calls carry the id: still served, through the other instance too.
    const { tools } = await client.listTools();
    expect(tools.filter((x) => x._meta?.ui).map((x) => x.name).sort()).toStrictEqual(want);
    await client.close();
  }, 60_000);
});
