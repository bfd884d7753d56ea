/**
 * LOG_FORMAT=json and LOG_REQUESTS=on against the real process (docs/operations.md, Logs): every
 * stderr line parses as one JSON object; each request's access line carries the request id its
 * response echoes (and its error body names), the route template, status, duration, tool and key
 * id prefix — never the key, the path's code or its query. X-Request-Id is believed only from a
 * TRUSTED_PROXIES peer. Off (the default), answers are as before.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir, useListeningApp, useTestApp } from './harness.js';
import { killServerProcesses, startServerProcess, type ServerProcess } from './server-process.js';

afterAll(killServerProcesses);

/** A generated request id: the process's random prefix, a counter in base 36. */
const ID = /^[A-Za-z0-9]{8}-[0-9a-z]+$/;

interface Logged {
  proc: ServerProcess;
  /** Every stderr line so far. */
  lines(): string[];
  /** Waits until a parsed line satisfies `pred` (bounded only by the test's timeout). */
  line(pred: (l: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}

async function start(env: Record<string, string>): Promise<Logged> {
  const proc = await startServerProcess({ RATE_LIMITS: 'off', WORKERS: '0', ...env });
  let text = '';
  proc.child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const lines = () => text.split('\n').filter((l) => l !== '');
  return {
    proc,
    lines,
    async line(pred) {
      for (;;) {
        for (const l of lines()) {
          try {
            const o = JSON.parse(l) as Record<string, unknown>;
            if (pred(o)) return o;
          } catch {
            // a text line: not the one
          }
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
  };
}

const post = (base: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('LOG_FORMAT=json, LOG_REQUESTS=on behind a trusted proxy', () => {
  it('access lines carry the response’s request id, the route template, status, duration, tool and key id prefix; every line is JSON; no key or query is logged', async () => {
    const s = await start({ LOG_FORMAT: 'json', LOG_REQUESTS: 'on', TRUSTED_PROXIES: '127.0.0.1', DATA_DIR: tempDir('dtb-logs-') });
    try {
      // The proxy's id is kept.
      const ok = await post(s.proc.base, '/api/base-convert', { value: '255' }, { 'x-request-id': 'proxy-id-123' });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-request-id')).toBe('proxy-id-123');
      const okLine = await s.line((l) => l.request_id === 'proxy-id-123' && l.status === 200);
      expect(okLine).toMatchObject({ level: 'info', msg: 'POST /api/base-convert 200', method: 'POST', route: '/api/base-convert', status: 200, tool: 'base_convert' });
      expect(typeof okLine.duration_ms).toBe('number');
      expect(Number.isNaN(Date.parse(okLine.time as string))).toBe(false);

      // An error body names its request; a malformed offered id is replaced by a new one.
      const bad = await post(s.proc.base, '/api/base-convert', { value: 'zz', from: 'dec' }, { 'x-request-id': 'bad id with spaces' });
      expect(bad.status).toBe(422);
      const id = bad.headers.get('x-request-id')!;
      expect(id).toMatch(ID);
      const body = (await bad.json()) as { success: boolean; error: { code: string; request_id: string } };
      expect(body.success).toBe(false);
      expect(body.error.code).toBe('PARSE_ERROR');
      expect(body.error.request_id).toBe(id);
      expect(await s.line((l) => l.request_id === id && l.status === 422)).toMatchObject({ route: '/api/base-convert', tool: 'base_convert' });

      // A key's id prefix, never the key; a path's code and query never reach the log.
      const reg = await post(s.proc.base, '/api/auth/register', { email: 'logs@example.com' });
      const { api_key: key } = (await reg.json()) as { api_key: string };
      expect(key).toMatch(/^dtb_/);
      // The key id is public (the registration logs it); a key is never logged.
      const registered = await s.line((l) => typeof l.msg === 'string' && l.msg.startsWith('api key registered: '));
      const keyId = /api key registered: (k_[A-Za-z0-9]+)/.exec(registered.msg as string)![1]!;
      const keyed = await post(s.proc.base, '/api/base-convert', { value: '1' }, { authorization: `Bearer ${key}` });
      const keyedLine = await s.line((l) => l.request_id === keyed.headers.get('x-request-id'));
      expect(keyedLine.key_id).toBe(keyId.slice(0, 8));
      const link = await fetch(`${s.proc.base}/s/secret-code-4711?api_key=${key}`, { redirect: 'manual' });
      expect(link.status).toBe(404);
      expect(await s.line((l) => l.request_id === link.headers.get('x-request-id'))).toMatchObject({ route: '/s/{code}', status: 404 });
      const redirect = await post(s.proc.base, '/api/shorten', { url: 'https://example.com/x' });
      const code = ((await redirect.json()) as { code: string }).code;
      const hop = await fetch(`${s.proc.base}/s/${code}`, { redirect: 'manual' });
      expect(hop.status).toBe(302);
      expect(hop.headers.get('x-request-id')).toMatch(ID);

      const all = s.lines();
      for (const l of all) expect(() => JSON.parse(l), l).not.toThrow();
      const text = all.join('\n');
      expect(text).not.toContain(key);
      expect(text).not.toContain(key.slice(4));
      expect(text).not.toContain('secret-code-4711');
      expect(text).not.toContain('api_key=');
    } finally {
      await s.proc.stop();
    }
  });
});

describe('LOG_REQUESTS=on without a trusted proxy', () => {
  it('ignores an offered X-Request-Id and generates one; the text access line names it', async () => {
    const s = await start({ LOG_REQUESTS: 'on', DATA_DIR: tempDir('dtb-logs-') });
    try {
      const res = await post(s.proc.base, '/api/base-convert', { value: '255' }, { 'x-request-id': 'spoofed-id' });
      const id = res.headers.get('x-request-id')!;
      expect(id).toMatch(ID);
      for (let i = 0; i < 200 && !s.lines().some((l) => l.includes(id)); i++) await new Promise((r) => setTimeout(r, 20));
      const line = s.lines().find((l) => l.includes(id))!;
      expect(line).toMatch(/^\S+ INFO POST \/api\/base-convert 200 \{"request_id":"[A-Za-z0-9]{8}-[0-9a-z]+","method":"POST","route":"\/api\/base-convert","status":200,"duration_ms":[\d.]+\}$/);
      expect(s.lines().join('\n')).not.toContain('spoofed-id');
    } finally {
      await s.proc.stop();
    }
  });
});

describe('request tracking off (the default)', () => {
  const t = useTestApp();
  it('still an X-Request-Id on every answer, and the error body names it (request_id by default)', async () => {
    const res = await t.request('POST', '/api/base-convert', { value: 'zz', from: 'dec' }, { 'x-request-id': 'x' });
    expect(res.headers.get('x-request-id')).toMatch(ID);
    const error = ((await res.json()) as { error: Record<string, unknown> }).error;
    expect(Object.keys(error)).toStrictEqual(['code', 'message', 'details', 'request_id']);
    expect(error.request_id).toBe(res.headers.get('x-request-id'));
  });
});

describe('request ids by default over real HTTP', () => {
  const t = useListeningApp({ env: { TRUSTED_PROXIES: '10.9.8.7' } });
  it('each request its own id — direct routes, the router, /s/{code}, /healthz — and an untrusted client’s id is replaced', async () => {
    const answers = [
      await post(t.url, '/api/base-convert', { value: '255' }, { 'x-request-id': 'forged-id' }),
      await post(t.url, '/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { accept: 'application/json, text/event-stream', 'x-request-id': 'forged-id' }),
      await fetch(`${t.url}/api/base-convert?x=1`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'forged-id' }, body: '{"value":"1"}' }),
      await fetch(`${t.url}/s/nope`, { redirect: 'manual', headers: { 'x-request-id': 'forged-id' } }),
      await fetch(`${t.url}/healthz`, { headers: { 'x-request-id': 'forged-id' } }),
      await fetch(`${t.url}/no/such/route`, { headers: { 'x-request-id': 'forged-id' } }),
    ];
    expect(answers.map((r) => r.status)).toStrictEqual([200, 200, 200, 404, 200, 404]);
    const ids = answers.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(ID);
    expect(new Set(ids).size).toBe(ids.length);
  });
});

describe('request ids by default behind a trusted proxy', () => {
  const t = useListeningApp({ env: { TRUSTED_PROXIES: '127.0.0.1' } });
  it('keeps the proxy’s well-formed id on direct and routed answers; replaces a malformed or overlong one', async () => {
    const direct = await post(t.url, '/api/base-convert', { value: '1' }, { 'x-request-id': 'lb-7f3a.1' });
    expect(direct.headers.get('x-request-id')).toBe('lb-7f3a.1');
    const routed = await fetch(`${t.url}/livez`, { headers: { 'x-request-id': 'lb-7f3a.2' } });
    expect(routed.headers.get('x-request-id')).toBe('lb-7f3a.2');
    for (const bad of ['has space', 'x'.repeat(129), 'quote"d']) {
      const res = await post(t.url, '/api/base-convert', { value: '1' }, { 'x-request-id': bad });
      expect(res.headers.get('x-request-id')).toMatch(ID);
    }
  });
});

describe('request ids for a browser', () => {
  const t = useTestApp({ env: { LOG_REQUESTS: 'on', LOG_LEVEL: 'silent', ALLOWED_ORIGINS: 'https://app.example' } });
  it('a cross-origin script may read X-Request-Id', async () => {
    const res = await t.request('POST', '/api/base-convert', { value: '1' }, { origin: 'https://app.example' });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(ID);
    expect(res.headers.get('access-control-expose-headers')?.split(/,\s*/)).toContain('x-request-id');
  });
});

describe('request ids in MCP errors', () => {
  const t = useTestApp({ env: { LOG_REQUESTS: 'on', LOG_LEVEL: 'silent' } });
  const rpc = (body: unknown) => t.request('POST', '/mcp', body, { accept: 'application/json, text/event-stream' });
  it('a failed tool call names its request in the error object; a JSON-RPC error in its data', async () => {
    const failed = await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: 'zz', from: 'dec' } } });
    const id = failed.headers.get('x-request-id')!;
    expect(id).toMatch(ID);
    const result = ((await failed.json()) as { result: { isError: boolean; content: Array<{ text: string }> } }).result;
    expect(result.isError).toBe(true);
    expect(JSON.parse(result.content[0]!.text)).toMatchObject({ error: { code: 'PARSE_ERROR', request_id: id } });
    // A protocol error of our own dispatch (2026-07-28): an unknown method.
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'logs', version: '1' } };
    const unknown = await t.request('POST', '/mcp', { jsonrpc: '2.0', id: 2, method: 'no/such', params: { _meta: meta } }, { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'no/such' });
    expect(unknown.status).toBe(404);
    const body = (await unknown.json()) as { error: { data?: { request_id?: string } } };
    expect(body.error.data?.request_id).toBe(unknown.headers.get('x-request-id'));
  });
  it('a protocol error of the legacy era (the SDK’s) names its request in its data too', async () => {
    const unknown = await rpc({ jsonrpc: '2.0', id: 3, method: 'no/such' });
    const id = unknown.headers.get('x-request-id')!;
    expect(id).toMatch(ID);
    expect(await unknown.json()).toStrictEqual({ jsonrpc: '2.0', id: 3, error: { code: -32601, message: 'Method not found', data: { request_id: id } } });
    const badParams = await rpc({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 7 } });
    const body = (await badParams.json()) as { error: { code: number; data?: { request_id?: string } } };
    expect(body.error.code).toBe(-32602);
    expect(body.error.data?.request_id).toBe(badParams.headers.get('x-request-id'));
  });
});
