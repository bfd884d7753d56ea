/**
 * The MCP Tasks extension (docs/tasks.md) over streamable HTTP, 2026-07-28: raw JSON-RPC for the
 * task methods (the SDK v2 client has no client side of the extension), the SDK v2 client for
 * "an undeclared client gets the synchronous result"; and tasks over stdio.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, listenTestApp, type ListeningApp } from './harness.js';
import { startSlowSite, type SlowSite } from './fixtures/slow-site.js';
import { jsonWithoutRequestId } from './request-ids.js';

const MODERN = '2026-07-28';
const EXT = 'io.modelcontextprotocol/tasks';
const ACCEPT = 'application/json, text/event-stream';

let t: ListeningApp;
let site: SlowSite;
beforeAll(async () => {
  [t, site] = await Promise.all([listenTestApp(), startSlowSite()]);
});
afterAll(async () => {
  await site.close();
  await t.close();
});

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Answer = { status: number; headers: Headers; json: any };

function envelope(declared: boolean): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': declared ? { extensions: { [EXT]: {} } } : {},
    'io.modelcontextprotocol/clientInfo': { name: 'tasks-test', version: '0' },
  };
}

let ids = 0;
/** One modern request with the matching headers. */
async function rpc(method: string, params: Record<string, unknown>, opts: { declared?: boolean; headers?: Record<string, string> } = {}): Promise<Answer> {
  const h: Record<string, string> = { 'content-type': 'application/json', accept: ACCEPT, 'mcp-protocol-version': MODERN, 'mcp-method': method };
  if (typeof params.name === 'string') h['mcp-name'] = params.name;
  if (typeof params.taskId === 'string') h['mcp-name'] = params.taskId;
  const r = await fetch(`${t.url}/mcp`, {
    method: 'POST',
    headers: { ...h, ...opts.headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++ids, method, params: { ...params, _meta: envelope(opts.declared ?? true) } }),
  });
  return { status: r.status, headers: r.headers, json: await jsonWithoutRequestId(r) };
}

async function pollUntil(taskId: string, want: string, headers: Record<string, string> = {}, ms = 8000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await rpc('tasks/get', { taskId }, { headers });
    expect(r.json.error, JSON.stringify(r.json)).toBeUndefined();
    if (r.json.result.status === want) return r.json.result;
    if (Date.now() > end) throw new Error(`task ${taskId}: ${JSON.stringify(r.json)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

describe('MCP Tasks extension (2026-07-28, HTTP)', () => {
  it('server/discover advertises the extension under capabilities.extensions', async () => {
    const r = await rpc('server/discover', {}, { declared: false });
    expect(r.json.result.capabilities).toStrictEqual({ tools: { listChanged: false }, extensions: { [EXT]: {} } });
  });

  it('a declared client calling seo_check on a slow site gets a task, then the result by polling', async () => {
    const args = { url: `${site.url}/slow.html?ms=700`, format: 'summary' };
    const r = await rpc('tools/call', { name: 'seo_check', arguments: args });
    expect(r.status).toBe(200);
    const created = r.json.result;
    expect(created).toMatchObject({ resultType: 'task', status: 'working', ttlMs: 3_600_000, pollIntervalMs: 1000 });
    expect(created.taskId).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    for (const k of ['result', 'error', 'task', 'requestState', 'ttl', 'pollInterval', 'content']) expect(created, k).not.toHaveProperty(k);
    // Durable before the answer: an immediate tasks/get resolves.
    const now = await rpc('tasks/get', { taskId: created.taskId });
    expect(now.json.result).toMatchObject({ resultType: 'complete', taskId: created.taskId, status: 'working' });
    expect(now.json.result).not.toHaveProperty('result');
    const done = await pollUntil(created.taskId, 'completed');
    const sync = await rpc('tools/call', { name: 'seo_check', arguments: args }, { declared: false });
    expect(sync.json.result.resultType).toBe('complete');
    expect(done.result.structuredContent).toStrictEqual(sync.json.result.structuredContent);
    expect(done.result.content).toStrictEqual(sync.json.result.content);
    expect(done.result.isError).toBeUndefined();
    expect(done.result._meta?.['io.modelcontextprotocol/related-task']).toBeUndefined();
    expect(done).not.toHaveProperty('error');
  });

  it('image_convert as a task: the completed result carries the image block, as the synchronous call does', async () => {
    const r = await rpc('tools/call', { name: 'image_convert', arguments: { url: `${site.url}/slow.png?ms=300`, format: 'png' } });
    expect(r.json.result.resultType).toBe('task');
    const done = await pollUntil(r.json.result.taskId, 'completed');
    expect(done.result.content[0]).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(done.result.structuredContent).toMatchObject({ format: 'png', width: 40, height: 30 });
  });

  it('a tool error completes the task with the isError result the synchronous call gives (not failed)', async () => {
    const args = { url: `${site.url}/gone.html?ms=300` };
    const r = await rpc('tools/call', { name: 'image_convert', arguments: args });
    expect(r.json.result.resultType).toBe('task');
    const done = await pollUntil(r.json.result.taskId, 'completed');
    const sync = await rpc('tools/call', { name: 'image_convert', arguments: args }, { declared: false });
    expect(sync.json.result.isError).toBe(true);
    expect(done.result).toStrictEqual({ resultType: 'complete', isError: true, content: sync.json.result.content });
    expect(done).not.toHaveProperty('error');
  });

  it('tasks/cancel: an empty ack; the task reads cancelled and its fetch is aborted; cancel again is the same ack', async () => {
    const closed = site.hangsClosed;
    const opened = site.hangsOpened;
    const r = await rpc('tools/call', { name: 'meta_extract', arguments: { url: `${site.url}/hang.html` } });
    const taskId = r.json.result.taskId as string;
    for (let i = 0; i < 100 && site.hangsOpened === opened; i++) await new Promise((res) => setTimeout(res, 20));
    const ack = await rpc('tasks/cancel', { taskId });
    expect(ack.status).toBe(200);
    expect(Object.keys(ack.json.result).sort()).toEqual(['_meta', 'resultType']);
    expect(ack.json.result.resultType).toBe('complete');
    for (let i = 0; i < 100 && site.hangsClosed === closed; i++) await new Promise((res) => setTimeout(res, 20));
    expect(site.hangsClosed).toBe(closed + 1);
    expect((await rpc('tasks/get', { taskId })).json.result.status).toBe('cancelled');
    expect((await rpc('tasks/cancel', { taskId })).json.result.resultType).toBe('complete');
    expect((await rpc('tasks/update', { taskId, inputResponses: { nothing: { ignored: true } } })).json.result.resultType).toBe('complete');
  });

  it('another caller cannot see the task: -32602, exactly as for an unknown id', async () => {
    const reg = await fetch(`${t.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'mcp-tasks@example.com' }) });
    const other = { authorization: `Bearer ${((await jsonWithoutRequestId(reg)) as { api_key: string }).api_key}` };
    const r = await rpc('tools/call', { name: 'seo_check', arguments: { url: `${site.url}/slow.html?ms=300` } });
    const taskId = r.json.result.taskId as string;
    for (const m of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
      const a = await rpc(m, { taskId }, { headers: other });
      expect(a.json.error?.code, m).toBe(-32602);
      expect(a.json.error.message).toMatch(/Task not found/);
    }
    const unknown = await rpc('tasks/get', { taskId: 'tasks-conformance-nonexistent-12345' });
    expect(unknown.json.error.code).toBe(-32602);
    await pollUntil(taskId, 'completed');
  });

  it('an undeclared client gets the plain synchronous result; tasks/* without the extension → 400 -32021 with requiredCapabilities', async () => {
    const r = await rpc('tools/call', { name: 'seo_check', arguments: { url: `${site.url}/slow.html?ms=200`, format: 'summary' } }, { declared: false });
    expect(r.json.result.resultType).toBe('complete');
    expect(r.json.result).not.toHaveProperty('taskId');
    expect(r.json.result.structuredContent.score).toBeTypeOf('number');
    for (const m of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const a = await rpc(m, { taskId: 'gate-test', ...(m === 'tasks/update' ? { inputResponses: {} } : {}) }, { declared: false });
      expect(a.status, m).toBe(400);
      expect(a.json.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [EXT]: {} } } } });
    }
  });

  it('a tool that is not long-running answers synchronously even to a declared client; a legacy task param changes nothing', async () => {
    const r = await rpc('tools/call', { name: 'base_convert', arguments: { value: '255' }, task: { ttl: 60000, pollInterval: 100 } });
    expect(r.json.result).toMatchObject({ resultType: 'complete', structuredContent: { hex: 'ff' } });
  });

  it('bad input to a long-running tool is answered at once (isError), without a task', async () => {
    const r = await rpc('tools/call', { name: 'seo_check', arguments: { url: 'not a url' } });
    expect(r.json.result.resultType).toBe('complete');
    expect(r.json.result.isError).toBe(true);
  });

  it('removed methods are -32601; Mcp-Name must match params.taskId (-32020); a bad taskId is -32602', async () => {
    for (const m of ['tasks/result', 'tasks/list']) {
      const a = await rpc(m, { taskId: 'x' });
      expect(a.status, m).toBe(404);
      expect(a.json.error.code).toBe(-32601);
    }
    const mismatch = await rpc('tasks/get', { taskId: 'abc' }, { headers: { 'mcp-name': 'def' } });
    expect(mismatch.status).toBe(400);
    expect(mismatch.json.error.code).toBe(-32020);
    const bad = await rpc('tasks/get', { taskId: 42 }, { headers: { 'mcp-name': '42' } });
    expect(bad.json.error.code).toBe(-32602);
  });

  it('the SDK v2 client (pinned 2026-07-28, no extension declared) gets synchronous results from the slow tools', async () => {
    const c = new ClientV2({ name: 'devtoolbox-tests', version: '0.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
    try {
      await c.connect(new HttpV2(new URL(`${t.url}/mcp`)));
      const r = await c.callTool({ name: 'seo_check', arguments: { url: `${site.url}/slow.html?ms=200`, format: 'summary' } });
      expect(r.isError).toBeFalsy();
      expect((r.structuredContent as { score: number }).score).toBeTypeOf('number');
    } finally {
      await c.close();
    }
  });
});

describe('MCP Tasks extension over stdio', () => {
  it('a task is created, polled and completed over stdio; -32021 without the extension', async () => {
    const ROOT = path.resolve(import.meta.dirname, '..');
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'stdio'], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: tempDir('dtb-tasks-stdio-'), LOG_LEVEL: 'warn', FETCH_ALLOW_PRIVATE: 'true', RATE_LIMITS: 'off', WORKERS: '0' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const answers = new Map<number, (v: unknown) => void>();
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const m = JSON.parse(line) as { id?: number };
      if (typeof m.id === 'number') answers.get(m.id)?.(m);
    });
    let n = 0;
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const send = (method: string, params: Record<string, unknown>, declared = true): Promise<any> => {
      const id = ++n;
      const p = new Promise((resolve) => answers.set(id, resolve));
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope(declared) } })}\n`);
      return p;
    };
    try {
      const created = await send('tools/call', { name: 'seo_check', arguments: { url: `${site.url}/slow.html?ms=300` } });
      expect(created.result.resultType).toBe('task');
      let got = await send('tasks/get', { taskId: created.result.taskId });
      for (let i = 0; i < 80 && got.result?.status === 'working'; i++) {
        await new Promise((r) => setTimeout(r, 100));
        got = await send('tasks/get', { taskId: created.result.taskId });
      }
      expect(got.result.status).toBe('completed');
      expect(got.result.result.structuredContent.score).toBeTypeOf('number');
      const refused = await send('tasks/get', { taskId: created.result.taskId }, false);
      expect(refused.error.code).toBe(-32021);
    } finally {
      child.kill('SIGTERM');
    }
  }, 30_000);
});

// RATE_LIMITS=off "turns off all of it" (docs/auth.md), yet task polling still answered 429.
describe('MCP task polling with RATE_LIMITS=off (the test app’s setting)', () => {
  it('is not bounded: 60 tasks/get in a row all answer', async () => {
    expect(t.services.config.rateLimits).toBe(false);
    const r = await rpc('tools/call', { name: 'seo_check', arguments: { url: `${site.url}/slow.html?ms=200`, format: 'summary' } });
    const taskId = r.json.result.taskId as string;
    const answers = [];
    for (let i = 0; i < 60; i++) answers.push((await rpc('tasks/get', { taskId })).status);
    expect(answers).toStrictEqual(Array(60).fill(200));
    await pollUntil(taskId, 'completed');
  });
});
