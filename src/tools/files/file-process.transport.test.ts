import { describe, expect, it } from 'vitest';
import { mcpError, useTestApp } from '../../../test/harness.js';
import { jsonWithoutRequestId } from '../../../test/request-ids.js';

const t = useTestApp();

const parsed = {
  action: 'parse',
  format: 'csv',
  delimiter: ',',
  columns: ['name', 'zip', 'n'],
  rows: [{ name: 'Ada, L', zip: '02134', n: 1.5 }],
  rowCount: 1,
};
const csv = 'name,zip,n\r\n"Ada, L",02134,1.5\r\n';

describe('file_process over REST', () => {
  it('answers on its own path and on the uniform path with the same fields', async () => {
    for (const path of ['/api/file-process', '/api/tools/file_process']) {
      const res = await t.request('POST', path, { action: 'parse', content: csv });
      expect(res.status).toBe(200);
      expect(await jsonWithoutRequestId(res)).toStrictEqual({ success: true, ...parsed });
    }
  });

  it('answers 422 for unparsable content and 400 for bad base64 or fields', async () => {
    const bad = await t.request('POST', '/api/file-process', { action: 'parse', content: '<rows><row></rows>' });
    expect(bad.status).toBe(422);
    expect(await jsonWithoutRequestId(bad)).toMatchObject({ success: false, error: { code: 'PARSE_ERROR', details: { line: 1 } } });
    const b64 = await t.request('POST', '/api/file-process', { action: 'parse', content: '%%%', encoding: 'base64' });
    expect(b64.status).toBe(400);
    expect(await jsonWithoutRequestId(b64)).toStrictEqual({
      success: false,
      error: { code: 'INVALID_INPUT', message: 'content is not valid base64', details: [{ path: 'content', message: 'Invalid base64' }] },
    });
    const field = await t.request('POST', '/api/file-process', { action: 'convert', content: 'a\n1\n', to: 'yaml' });
    expect(field.status).toBe(400);
    expect(await jsonWithoutRequestId(field)).toMatchObject({ success: false, error: { code: 'INVALID_INPUT', details: [{ path: 'to' }] } });
  });

  it('takes bodies over the 1 MiB default (up to 10 MiB) and refuses larger ones with 413', async () => {
    const big = 'v\n' + '1234567890123\n'.repeat(150_000); // 2.1 MB
    const ok = await t.request('POST', '/api/file-process', { action: 'analyze', content: big });
    expect(ok.status).toBe(200);
    expect(await jsonWithoutRequestId(ok)).toMatchObject({ success: true, rowCount: 150_000, columnCount: 1 });
    const huge = await t.request('POST', '/api/file-process', { action: 'analyze', content: 'x'.repeat(11 * 1024 * 1024) });
    expect(huge.status).toBe(413);
    expect(await jsonWithoutRequestId(huge)).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
  });
});

describe('file_process over MCP', () => {
  it('returns structuredContent plus the same JSON as text', async () => {
    const client = await t.mcpClient();
    const r = await client.callTool({ name: 'file_process', arguments: { action: 'parse', content: csv } });
    expect(r.isError).toBeFalsy();
    expect(r.structuredContent).toStrictEqual(parsed);
    expect(r.content).toStrictEqual([{ type: 'text', text: JSON.stringify(parsed) }]);
  });

  it('sends progress notifications when the call carries a progressToken', async () => {
    const client = await t.mcpClient();
    const seen: Array<{ progress: number; total?: number }> = [];
    const r = await client.callTool(
      { name: 'file_process', arguments: { action: 'analyze', content: 'a,b\n' + '1,x\n'.repeat(20_000) } },
      undefined,
      { onprogress: (p) => void seen.push({ progress: p.progress, total: p.total }) },
    );
    expect(r.isError).toBeFalsy();
    expect(seen.length).toBeGreaterThanOrEqual(4);
    expect(seen.every((p) => p.total === 100)).toBe(true);
    expect(seen.map((p) => p.progress)).toStrictEqual([...seen.map((p) => p.progress)].sort((a, b) => a - b));
    expect(seen.at(-1)!.progress).toBe(100);
  });

  it('reports failures as isError with the contract error and no structuredContent', async () => {
    const client = await t.mcpClient();
    const r = await client.callTool({ name: 'file_process', arguments: { action: 'parse', content: 'a,b\n"open\n', format: 'csv' } });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toBeUndefined();
    expect(mcpError(r as { isError?: boolean; content?: unknown })).toStrictEqual({
      code: 'PARSE_ERROR',
      message: 'Invalid CSV at line 2, column 1: the quoted field starting here is never closed',
      details: { line: 2, column: 1, record: 2 },
    });
  });
});
