// The four text and time tools over the real REST projection (app.request) and a real MCP client.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApp } from '../../../test/harness.js';
import { manualClock } from '../../core/clock.js';
import { jsonWithoutRequestId } from '../../../test/request-ids.js';

const NOW = Date.parse('2026-11-20T16:50:00Z');
const t = useTestApp({ overrides: { clock: manualClock(NOW) } });
let mcp: Client;
beforeAll(async () => {
  mcp = await t.mcpClient();
});

const post = async (path: string, body: unknown) => {
  const r = await t.request('POST', path, body);
  return { status: r.status, body: (await jsonWithoutRequestId(r)) as unknown };
};

describe('text tools over REST', () => {
  it('xml_format beautifies, and answers 422 with line and column for bad XML', async () => {
    expect(await post('/api/xml-format', { input: '<a><b>x</b><!-- c --></a>' })).toStrictEqual({
      status: 200,
      body: { success: true, action: 'beautify', valid: true, result: '<a>\n  <b>x</b>\n  <!-- c -->\n</a>' },
    });
    expect(await post('/api/xml-format', { input: '<a>\n<b></a>', action: 'minify' })).toStrictEqual({
      status: 422,
      body: {
        success: false,
        error: { code: 'PARSE_ERROR', message: "Invalid XML at line 2, column 4: Expected closing tag 'b' (opened in line 2, col 1) instead of closing tag 'a'.", details: { line: 2, column: 4 } },
      },
    });
    expect(await post('/api/tools/xml_format', { input: '<a>', action: 'validate' })).toStrictEqual({
      status: 200,
      body: { success: true, action: 'validate', valid: false, error: { message: "Unclosed tag 'a'.", line: 1, column: 1 } },
    });
  });

  it('sql_format upper-cases keywords; an unknown dialect is a 400', async () => {
    expect(await post('/api/sql-format', { input: `select 'select' from "from"`, action: 'uppercase' })).toStrictEqual({
      status: 200,
      body: { success: true, action: 'uppercase', result: `SELECT 'select' FROM "from"` },
    });
    const r = await post('/api/sql-format', { input: 'select 1', dialect: 'cobol' });
    expect(r.status).toBe(400);
    expect((r.body as { error: { code: string } }).error.code).toBe('INVALID_INPUT');
  });

  it('cron_parse reads now from the service clock', async () => {
    expect(await post('/api/cron-parse', { expression: '0 9 * * MON', timezone: 'Asia/Shanghai', count: 2 })).toStrictEqual({
      status: 200,
      body: {
        success: true,
        expression: '0 9 * * MON',
        description: 'At 09:00, only on Monday',
        fields: { minute: '0', hour: '9', dayOfMonth: '*', month: '*', dayOfWeek: 'MON' },
        timezone: 'Asia/Shanghai',
        nextRuns: ['2026-11-23T01:00:00.000Z', '2026-11-30T01:00:00.000Z'],
      },
    });
    expect((await post('/api/cron-parse', { expression: '61 * * * *' })).status).toBe(422);
  });

  it('timezone_convert: 422 in a DST gap, 400 for an unknown zone', async () => {
    expect((await post('/api/timezone-convert', { datetime: '2026-03-08T02:30', fromZone: 'America/New_York' })).status).toBe(422);
    expect((await post('/api/timezone-convert', { datetime: '2026-03-08T02:30', toZone: 'Nowhere/Land' })).status).toBe(400);
  });
});

describe('text tools over MCP', () => {
  it('lists the four tools as read-only, idempotent, closed-world', async () => {
    const { tools } = await mcp.listTools();
    for (const name of ['xml_format', 'sql_format', 'cron_parse', 'timezone_convert']) {
      const tool = tools.find((x) => x.name === name);
      expect(tool?.annotations).toMatchObject({ readOnlyHint: true, idempotentHint: true, openWorldHint: false });
      expect(tool?.outputSchema).toBeDefined();
    }
  });

  it('returns structuredContent equal to the REST fields', async () => {
    const args = { datetime: '2026-11-22T09:00', toZone: 'Europe/London' };
    const r = await mcp.callTool({ name: 'timezone_convert', arguments: args });
    const expected = {
      source: { zone: 'Asia/Shanghai', datetime: '2026-11-22T09:00:00', offset: '+08:00', iso: '2026-11-22T09:00:00.000+08:00' },
      target: { zone: 'Europe/London', datetime: '2026-11-22T01:00:00', offset: '+00:00', iso: '2026-11-22T01:00:00.000+00:00' },
    };
    expect(r.structuredContent).toStrictEqual(expected);
    expect((await post('/api/timezone-convert', args)).body).toStrictEqual({ success: true, ...expected });
  });

  it('reports a failing call as isError with the error JSON', async () => {
    const r = await mcp.callTool({ name: 'cron_parse', arguments: { expression: '* * * * * *' } });
    expect(r.isError).toBe(true);
    expect(r.structuredContent).toBeUndefined();
    const text = (r.content as Array<{ type: string; text: string }>)[0]!.text;
    expect(JSON.parse(text)).toStrictEqual({
      error: {
        code: 'PARSE_ERROR',
        message: 'Expected 5 fields (minute hour day-of-month month day-of-week), got 6: a seconds (or year) field is not supported',
        details: { fields: 6 },
      },
    });
  });
});
