/**
 * Request ids in MCP errors, seen by the real SDK clients over HTTP (docs/operations.md, Logs and
 * request ids): with request tracking on, a failed tool call's error object and a JSON-RPC
 * error's data name the request id of the HTTP answer that carried them — SDK v1 on the legacy
 * era (whose protocol errors come from the SDK server) and SDK v2 pinned to 2026-07-28 (our
 * dispatch) alike.
 */
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mcpError, useListeningApp } from './harness.js';

const ID = /^[A-Za-z0-9]{8}-[0-9a-z]+$/;

/** A fetch that remembers the X-Request-Id of the last answer. */
function recordingFetch(): { fetch: typeof fetch; last(): string | null } {
  let last: string | null = null;
  return {
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      last = res.headers.get('x-request-id');
      return res;
    },
    last: () => last,
  };
}

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const close of closers.splice(0)) await close().catch(() => {});
});

describe('request ids in MCP errors over HTTP, with request tracking on', () => {
  const t = useListeningApp({ env: { LOG_REQUESTS: 'on', LOG_LEVEL: 'silent' } });

  it('SDK v1 (legacy era): a failed call’s error object and the SDK’s protocol error name their request', async () => {
    const rec = recordingFetch();
    const c = new ClientV1({ name: 'request-id', version: '1.0.0' });
    closers.push(() => c.close());
    await c.connect(new HttpV1(new URL(`${t.url}/mcp`), { fetch: rec.fetch }));
    const bad = await c.callTool({ name: 'base_convert', arguments: { value: '12z' } });
    expect(bad.isError).toBe(true);
    expect(rec.last()).toMatch(ID);
    expect(mcpError(bad)).toMatchObject({ code: 'PARSE_ERROR', request_id: rec.last() });
    const refused = await c.request({ method: 'no/such', params: {} }, z.object({})).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: -32601, data: { request_id: rec.last() } });
  });

  it('SDK v2 pinned to 2026-07-28: a failed call’s error object and a JSON-RPC error name their request', async () => {
    const rec = recordingFetch();
    const c = new ClientV2({ name: 'request-id', version: '0.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    closers.push(() => c.close());
    await c.connect(new HttpV2(new URL(`${t.url}/mcp`), { fetch: rec.fetch }));
    const bad = await c.callTool({ name: 'base_convert', arguments: { value: '12z' } });
    expect(bad.isError).toBe(true);
    expect(rec.last()).toMatch(ID);
    expect(mcpError(bad)).toMatchObject({ code: 'PARSE_ERROR', request_id: rec.last() });
    const unknown = await c.callTool({ name: 'no_such_tool', arguments: {} }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ data: { request_id: rec.last() } });
  });
});
