import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { invokeTool } from '../../invoke.js';
import type { AnyTool } from '../../registry.js';
import { closeServices, type Services } from '../../services.js';
import { testServices, toolContext } from '../../../test/harness.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';
import { decodeContent } from './content.js';
import { BASE64_CONTENT_PATTERN, fileProcess } from './file-process.js';
import { MAX_ROWS } from './table.js';
import { MAX_XML_DEPTH, MAX_XML_ELEMENTS } from './xml.js';

let services: Services;
beforeAll(async () => {
  services = await testServices();
});
afterAll(async () => {
  await closeServices(services);
});

const tool = fileProcess as unknown as AnyTool;

async function call(input: Record<string, unknown>, progress?: (p: number, t?: number, m?: string) => Promise<void>): Promise<Record<string, unknown>> {
  return (await invokeTool(tool, input, toolContext(services, {}, progress))).json;
}

async function fail(input: unknown): Promise<{ code: string; status: number; message: string; details: unknown }> {
  try {
    await invokeTool(tool, input, toolContext(services));
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    return { code: err.code, status: err.status, message: err.message, details: err.details };
  }
  throw new Error('expected the call to fail');
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');

describe('parse CSV / TSV', () => {
  it('reads RFC 4180: BOM, CRLF, quoted delimiters, doubled quotes, embedded line breaks, typed values', async () => {
    const csv = '\uFEFFname,age,zip,ok,big,note\r\n"Lovelace, Ada",36,02134,TRUE,12345678901234567890,"say ""hi""\r\nthere"\r\nLinus,,94105,false,1.50,\r\n';
    expect(await call({ action: 'parse', content: csv })).toStrictEqual({
      action: 'parse',
      format: 'csv',
      delimiter: ',',
      columns: ['name', 'age', 'zip', 'ok', 'big', 'note'],
      rows: [
        { name: 'Lovelace, Ada', age: 36, zip: '02134', ok: true, big: '12345678901234567890', note: 'say "hi"\r\nthere' },
        { name: 'Linus', age: null, zip: 94105, ok: false, big: 1.5, note: null },
      ],
      rowCount: 2,
    });
  });

  it('detects TSV and semicolon CSV, and honours an explicit delimiter', async () => {
    expect(await call({ action: 'parse', content: 'a\tb\n1\tx y\n' })).toStrictEqual({
      action: 'parse', format: 'tsv', delimiter: '\t', columns: ['a', 'b'], rows: [{ a: 1, b: 'x y' }], rowCount: 1,
    });
    expect(await call({ action: 'parse', content: 'a;b\n1,5;2\n3;4\n' })).toStrictEqual({
      action: 'parse', format: 'csv', delimiter: ';', columns: ['a', 'b'], rows: [{ a: '1,5', b: 2 }, { a: 3, b: 4 }], rowCount: 2,
    });
    expect(await call({ action: 'parse', content: 'a|b\n1|2\n', format: 'csv', delimiter: '|' })).toStrictEqual({
      action: 'parse', format: 'csv', delimiter: '|', columns: ['a', 'b'], rows: [{ a: 1, b: 2 }], rowCount: 1,
    });
  });

  it('names headerless columns, renames empty and repeated headers, pads short rows, skips blank lines', async () => {
    expect(await call({ action: 'parse', content: '1,2\n3\n', header: false })).toStrictEqual({
      action: 'parse', format: 'csv', delimiter: ',', columns: ['column_1', 'column_2'], rows: [{ column_1: 1, column_2: 2 }, { column_1: 3, column_2: null }], rowCount: 2,
    });
    expect(await call({ action: 'parse', content: 'a,,a\n1,2,3\n\n4,5,6,\n' })).toStrictEqual({
      action: 'parse', format: 'csv', delimiter: ',', columns: ['a', 'column_2', 'a_2'], rows: [{ a: 1, column_2: 2, a_2: 3 }, { a: 4, column_2: 5, a_2: 6 }], rowCount: 2,
    });
  });

  it('keeps blank lines of a one-column table as null values', async () => {
    expect(await call({ action: 'parse', content: 'v\r\n1\r\n\r\n2\r\n' })).toStrictEqual({
      action: 'parse', format: 'csv', delimiter: ',', columns: ['v'], rows: [{ v: 1 }, { v: null }, { v: 2 }], rowCount: 3,
    });
  });

  it('answers an empty text with no columns and no rows', async () => {
    expect(await call({ action: 'parse', content: '' })).toStrictEqual({ action: 'parse', format: 'csv', delimiter: ',', columns: [], rows: [], rowCount: 0 });
  });

  it('refuses malformed quotes and extra fields with 422 and where', async () => {
    expect(await fail({ action: 'parse', content: 'a,b\n1,"open\n2,3\n' })).toStrictEqual({
      code: 'PARSE_ERROR', status: 422, message: 'Invalid CSV at line 2, column 3: the quoted field starting here is never closed', details: { line: 2, column: 3, record: 2 },
    });
    expect(await fail({ action: 'parse', content: 'a,b\n"x"y,1\n' })).toMatchObject({ code: 'PARSE_ERROR', details: { line: 2, column: 1, record: 2 } });
    expect(await fail({ action: 'parse', content: 'a,b\n1,2,3\n' })).toStrictEqual({
      code: 'PARSE_ERROR', status: 422, message: 'Record 2 has 3 fields but the header names 2 columns', details: { record: 2 },
    });
  });
});

describe('parse JSON and XML', () => {
  it('reads an array of objects (union of keys, first-seen order) and a single object', async () => {
    expect(await call({ action: 'parse', content: ' [{"a":1,"b":"x"},{"c":true,"a":null},{"b":{"n":[1]}}] ' })).toStrictEqual({
      action: 'parse', format: 'json', columns: ['a', 'b', 'c'],
      rows: [{ a: 1, b: 'x', c: null }, { a: null, b: null, c: true }, { a: null, b: { n: [1] }, c: null }], rowCount: 3,
    });
    expect(await call({ action: 'parse', content: '{"id":7}' })).toStrictEqual({ action: 'parse', format: 'json', columns: ['id'], rows: [{ id: 7 }], rowCount: 1 });
  });

  it('refuses invalid JSON with line and column, and JSON that is not rows', async () => {
    expect(await fail({ action: 'parse', content: '[{"a":1},\n {"a":}]' })).toMatchObject({ code: 'PARSE_ERROR', status: 422, details: { line: 2, column: 7 } });
    expect(await fail({ action: 'parse', content: '[1,2]', format: 'json' })).toStrictEqual({
      code: 'PARSE_ERROR', status: 422, message: 'JSON array element 1 is not an object', details: { row: 1 },
    });
    expect(await fail({ action: 'parse', content: '"text"', format: 'json' })).toMatchObject({ code: 'PARSE_ERROR', status: 422 });
    expect(await fail({ action: 'parse', content: `[{"a":${'['.repeat(300)}${']'.repeat(300)}}]` })).toMatchObject({ code: 'PARSE_ERROR', status: 422 });
  });

  it('reads <rows><row> XML with entities, CDATA and empty elements', async () => {
    const xml = '<?xml version="1.0"?>\n<rows>\n  <row><name>A &amp; B &#x263A;</name><code>007</code><n>2.5</n><raw><![CDATA[<b>&amp;</b>]]></raw><e/></row>\n</rows>';
    expect(await call({ action: 'parse', content: xml })).toStrictEqual({
      action: 'parse', format: 'xml', columns: ['name', 'code', 'n', 'raw', 'e'],
      rows: [{ name: 'A & B ☺', code: '007', n: 2.5, raw: '<b>&amp;</b>', e: null }], rowCount: 1,
    });
  });

  it('reads a repeated element with attributes under any root', async () => {
    const xml = '<catalog><book id="b1" lang="en"><title>Dune</title><price>9.99</price></book><book id="b2"><title>Solaris</title></book></catalog>';
    expect(await call({ action: 'parse', content: xml })).toStrictEqual({
      action: 'parse', format: 'xml', columns: ['id', 'lang', 'title', 'price'],
      rows: [{ id: 'b1', lang: 'en', title: 'Dune', price: 9.99 }, { id: 'b2', lang: null, title: 'Solaris', price: null }], rowCount: 2,
    });
  });

  it('never expands DOCTYPE entities (billion laughs stays a literal reference)', async () => {
    const lol = '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]><rows><row><a>&lol3;</a></row></rows>';
    expect(await call({ action: 'parse', content: lol })).toStrictEqual({ action: 'parse', format: 'xml', columns: ['a'], rows: [{ a: '&lol3;' }], rowCount: 1 });
  });

  it('refuses invalid XML with line and column, and too deep nesting', async () => {
    expect(await fail({ action: 'parse', content: '<rows>\n<row><a>1</b></row></rows>' })).toMatchObject({ code: 'PARSE_ERROR', status: 422, details: { line: 2 } });
    expect(await fail({ action: 'parse', content: `${'<a>'.repeat(200)}${'</a>'.repeat(200)}` })).toMatchObject({ code: 'PARSE_ERROR', status: 422 });
  });
});

describe('analyze', () => {
  it('profiles every kind of column', async () => {
    const csv = [
      'int,num,bool,date,text,empty,mixed,ids',
      '1,1.5,true,2024-01-31,apple,,1,007',
      '3,2,false,2023-12-01T10:00:00Z,pear,,x,008',
      '5,-0.5,true,2024-06-01,apple,,true,007',
      ',4,,,,,,',
    ].join('\n');
    const r = await call({ action: 'analyze', content: csv });
    expect(r).toStrictEqual({
      action: 'analyze', format: 'csv', delimiter: ',', rowCount: 4, columnCount: 8,
      columns: [
        { name: 'int', type: 'integer', nullCount: 1, uniqueCount: 3, stats: { min: 1, max: 5, mean: 3, median: 3, stddev: 2, sum: 9 } },
        { name: 'num', type: 'number', nullCount: 0, uniqueCount: 4, stats: { min: -0.5, max: 4, mean: 1.75, median: 1.75, stddev: expect.closeTo(1.8484, 4) as unknown as number, sum: 7 } },
        { name: 'bool', type: 'boolean', nullCount: 1, uniqueCount: 2, stats: { trueCount: 2, falseCount: 1 } },
        { name: 'date', type: 'date', nullCount: 1, uniqueCount: 3, stats: { min: '2023-12-01T10:00:00Z', max: '2024-06-01' } },
        { name: 'text', type: 'string', nullCount: 1, uniqueCount: 2, stats: { minLength: 4, maxLength: 5, top: [{ value: 'apple', count: 2 }, { value: 'pear', count: 1 }] } },
        { name: 'empty', type: 'empty', nullCount: 4, uniqueCount: 0, stats: null },
        { name: 'mixed', type: 'mixed', nullCount: 1, uniqueCount: 3, stats: { minLength: 1, maxLength: 4, top: [{ value: 'x', count: 1 }, { value: 1, count: 1 }, { value: true, count: 1 }] } },
        { name: 'ids', type: 'string', nullCount: 1, uniqueCount: 2, stats: { minLength: 3, maxLength: 3, top: [{ value: '007', count: 2 }, { value: '008', count: 1 }] } },
      ],
    });
  });

  it('uses the sample standard deviation and 0 for a single value', async () => {
    const r = (await call({ action: 'analyze', content: 'v\n2\n4\n4\n4\n5\n5\n7\n9\n' })) as { columns: Array<{ stats: { stddev: number } }> };
    expect(r.columns[0]!.stats.stddev).toBeCloseTo(Math.sqrt(32 / 7), 12);
    const one = (await call({ action: 'analyze', content: '[{"v":3}]' })) as { columns: unknown[] };
    expect(one.columns).toStrictEqual([{ name: 'v', type: 'integer', nullCount: 0, uniqueCount: 1, stats: { min: 3, max: 3, mean: 3, median: 3, stddev: 0, sum: 3 } }]);
  });

  it('analyze of 1e308 + 1e308 answered 500 (the sum overflowed to Infinity): sum is null, the other figures finite', async () => {
    const r = await call({ action: 'analyze', content: 'a\n1e308\n1e308\n' });
    expect(r.columns).toStrictEqual([
      { name: 'a', type: 'integer', nullCount: 0, uniqueCount: 1, stats: { min: 1e308, max: 1e308, mean: 1e308, median: 1e308, stddev: 0, sum: null } },
    ]);
    // Opposite extremes: the deviations (2e308) and their squares overflow unless scaled.
    const wide = (await call({ action: 'analyze', content: '[{"a":-1e308},{"a":1e308},{"a":1e308}]' })) as { columns: Array<{ stats: Record<string, unknown> }> };
    expect(wide.columns[0]!.stats).toStrictEqual({ min: -1e308, max: 1e308, mean: expect.closeTo(1e308 / 3, -300) as unknown as number, median: 1e308, stddev: expect.closeTo(1.1547e308, -304) as unknown as number, sum: 1e308 });
    const over = (await call({ action: 'analyze', content: 'a\n-1.7e308\n1.7e308\n' })) as { columns: Array<{ stats: Record<string, unknown> }> };
    expect(over.columns[0]!.stats).toStrictEqual({ min: -1.7e308, max: 1.7e308, mean: 0, median: 0, stddev: null, sum: 0 });
  });

  it('lists at most five top values, most frequent first, first seen first on ties', async () => {
    const r = (await call({ action: 'analyze', content: 'v\na\nb\nc\nd\ne\nf\nf\ng\ng\ng\n' })) as { columns: Array<{ stats: unknown }> };
    expect(r.columns[0]!.stats).toStrictEqual({
      minLength: 1, maxLength: 1,
      top: [{ value: 'g', count: 3 }, { value: 'f', count: 2 }, { value: 'a', count: 1 }, { value: 'b', count: 1 }, { value: 'c', count: 1 }],
    });
  });
});

describe('convert', () => {
  it('keeps every value through csv → json → xml → csv', async () => {
    const csv = 'id,name,zip,price,ok,when,note,empty\r\n1,"Ada, L",02134,9.99,true,2024-01-02,"multi\r\nline ""q""",\r\n2,  padded  ,94105,-3,false,2024-02-03T04:05:06Z,<tag> & amp;,\r\n';
    const json = (await call({ action: 'convert', content: csv, to: 'json' })) as { content: string };
    const xml = (await call({ action: 'convert', content: json.content, to: 'xml' })) as { content: string; from: string };
    expect(xml.from).toBe('json');
    const back = (await call({ action: 'convert', content: xml.content, to: 'csv' })) as { content: string; from: string; rowCount: number };
    expect(back).toStrictEqual({ action: 'convert', from: 'xml', to: 'csv', content: csv.replace('  padded  ', '"  padded  "'), rowCount: 2 });
    const rows = (await call({ action: 'parse', content: back.content })) as { rows: unknown };
    expect(rows.rows).toStrictEqual((await call({ action: 'parse', content: csv })).rows);
  });

  it('converts to TSV and JSON with the declared source format', async () => {
    expect(await call({ action: 'convert', content: '[{"a":"x\\ty","b":1}]', from: 'json', to: 'tsv' })).toStrictEqual({
      action: 'convert', from: 'json', to: 'tsv', content: 'a\tb\r\n"x\ty"\t1\r\n', rowCount: 1,
    });
    expect(await call({ action: 'convert', content: 'a,b\n1,\n', to: 'json' })).toStrictEqual({
      action: 'convert', from: 'csv', to: 'json', content: '[\n  {\n    "a": 1,\n    "b": null\n  }\n]\n', rowCount: 1,
    });
  });

  it('writes CSV without a header line and with a chosen delimiter', async () => {
    expect(await call({ action: 'convert', content: '[{"a":"x;y","b":2}]', to: 'csv', delimiter: ';', header: false })).toStrictEqual({
      action: 'convert', from: 'json', to: 'csv', content: '"x;y";2\r\n', rowCount: 1,
    });
  });
});

describe('generate', () => {
  it('writes RFC 4180 CSV with the union of keys in first-seen order', async () => {
    const data = [{ b: 'plain', a: 'has,comma' }, { c: 'line\nbreak', a: 'say "hi"' }, { b: null, d: { nested: [1, 2] }, a: 12.5 }];
    expect(await call({ action: 'generate', data })).toStrictEqual({
      action: 'generate', format: 'csv',
      content: 'b,a,c,d\r\nplain,"has,comma",,\r\n,"say ""hi""","line\nbreak",\r\n,12.5,,"{""nested"":[1,2]}"\r\n',
      rowCount: 3,
    });
  });

  it('writes JSON, TSV and XML with safe element names', async () => {
    const data = [{ 'first name': 'Ada', '2nd': true, 'a:b': 1 }];
    expect(await call({ action: 'generate', data, format: 'json' })).toStrictEqual({
      action: 'generate', format: 'json', content: '[\n  {\n    "first name": "Ada",\n    "2nd": true,\n    "a:b": 1\n  }\n]\n', rowCount: 1,
    });
    expect(await call({ action: 'generate', data, format: 'tsv', header: false })).toStrictEqual({ action: 'generate', format: 'tsv', content: 'Ada\ttrue\t1\r\n', rowCount: 1 });
    const xml = (await call({ action: 'generate', data, format: 'xml' })) as { content: string };
    expect(xml.content).toBe(
      '<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n  <row>\n    <first_x0020_name>Ada</first_x0020_name>\n    <_x0032_nd>true</_x0032_nd>\n    <a_x003A_b>1</a_x003A_b>\n  </row>\n</rows>\n',
    );
    expect(await call({ action: 'parse', content: xml.content })).toStrictEqual({
      action: 'parse', format: 'xml', columns: ['first name', '2nd', 'a:b'], rows: [{ 'first name': 'Ada', '2nd': true, 'a:b': 1 }], rowCount: 1,
    });
  });

  it('writes an empty data set as a bare header-less document', async () => {
    expect(await call({ action: 'generate', data: [], format: 'csv' })).toStrictEqual({ action: 'generate', format: 'csv', content: '\r\n', rowCount: 0 });
    expect(await call({ action: 'generate', data: [], format: 'xml' })).toStrictEqual({
      action: 'generate', format: 'xml', content: '<?xml version="1.0" encoding="UTF-8"?>\n<rows>\n</rows>\n', rowCount: 0,
    });
  });

  it('refuses characters XML 1.0 cannot carry', async () => {
    expect(await fail({ action: 'generate', data: [{ a: 'ok' }, { a: 'bell\u0007' }], format: 'xml' })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400, message: 'Row 2, column "a" holds U+0007, which XML 1.0 cannot represent', details: { row: 2, column: 'a' },
    });
  });
});

describe('encoding', () => {
  it('decodes base64 content and encodes the output content', async () => {
    const r = await call({ action: 'convert', content: b64('a,b\n1,é\n'), encoding: 'base64', to: 'tsv' });
    expect(r).toStrictEqual({ action: 'convert', from: 'csv', to: 'tsv', content: b64('a\tb\r\n1\té\r\n'), rowCount: 1 });
    expect(await call({ action: 'generate', data: [{ x: 1 }], encoding: 'base64' })).toStrictEqual({ action: 'generate', format: 'csv', content: b64('x\r\n1\r\n'), rowCount: 1 });
  });

  it('reads UTF-16 with a BOM and UTF-8 with a BOM from base64', async () => {
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('a\n1\n', 'utf16le')]).toString('base64');
    expect(await call({ action: 'parse', content: utf16, encoding: 'base64' })).toMatchObject({ columns: ['a'], rows: [{ a: 1 }] });
    const bom8 = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('a\n1\n')]).toString('base64');
    expect(await call({ action: 'parse', content: bom8, encoding: 'base64' })).toMatchObject({ columns: ['a'], rows: [{ a: 1 }] });
  });

  it('refuses invalid base64 with 400 and undecodable bytes with 422', async () => {
    expect(await fail({ action: 'parse', content: 'not base64!', encoding: 'base64' })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400, message: 'content is not valid base64', details: [{ path: 'content', message: 'Invalid base64' }],
    });
    expect(await fail({ action: 'parse', content: 'abcde', encoding: 'base64' })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
    expect(await fail({ action: 'parse', content: Buffer.from([0x61, 0xff, 0x0a]).toString('base64'), encoding: 'base64' })).toMatchObject({ code: 'PARSE_ERROR', status: 422 });
  });
});

describe('prototype keys', () => {
  it('keeps __proto__ and constructor as ordinary columns everywhere and pollutes nothing', async () => {
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const data = JSON.parse('[{"__proto__":{"polluted":1},"constructor":"c","toString":"t","hasOwnProperty":"h"}]') as unknown[];
    const csv = (await call({ action: 'generate', data })) as { content: string };
    expect(csv.content).toBe('__proto__,constructor,toString,hasOwnProperty\r\n"{""polluted"":1}",c,t,h\r\n');
    const parsed = (await call({ action: 'parse', content: csv.content })) as { rows: unknown[] };
    expect(JSON.stringify(parsed.rows)).toBe('[{"__proto__":"{\\"polluted\\":1}","constructor":"c","toString":"t","hasOwnProperty":"h"}]');
    expect(Object.getPrototypeOf(parsed.rows[0])).toBe(Object.prototype);
    const xml = (await call({ action: 'generate', data, format: 'xml' })) as { content: string };
    const fromXml = (await call({ action: 'parse', content: xml.content })) as { rows: unknown[]; columns: string[] };
    expect(fromXml.columns).toStrictEqual(['__proto__', 'constructor', 'toString', 'hasOwnProperty']);
    expect(JSON.stringify(fromXml.rows)).toBe('[{"__proto__":"{\\"polluted\\":1}","constructor":"c","toString":"t","hasOwnProperty":"h"}]');
    const json = (await call({ action: 'generate', data, format: 'json' })) as { content: string };
    expect(JSON.parse(json.content)).toStrictEqual(data);
    const nested = (await call({ action: 'parse', content: '<rows><row><x><__proto__>1</__proto__><constructor>2</constructor></x></row></rows>' })) as { rows: unknown[] };
    expect(JSON.stringify(nested.rows)).toBe('[{"x":{"__proto__":1,"constructor":2}}]');
    const analysis = (await call({ action: 'analyze', content: '{"__proto__":1,"constructor":2}' })) as { columns: Array<{ name: string }> };
    expect(analysis.columns.map((c) => c.name)).toStrictEqual(['__proto__', 'constructor']);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toStrictEqual(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('XML caps apply while reading, before the parse', () => {
  it('XML with 3M unclosed <a> answered a 422 whose message was 30 MB: refused at depth 101, with a short message', async () => {
    expect(await fail({ action: 'parse', content: '<a>'.repeat(3_000_000) })).toStrictEqual({
      code: 'PARSE_ERROR', status: 422, message: `XML nested deeper than ${MAX_XML_DEPTH} elements is not supported`, details: undefined,
    });
  });

  it('850k XML rows were refused only after 3.3 s and 1.1 GB of parsing: refused by the scan (a syntax error at the end is never reached)', async () => {
    const rows = '<rows>' + '<row/>'.repeat(850_000) + '</rows><broken';
    expect(await fail({ action: 'parse', content: rows })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400, message: `Too many rows: more than ${MAX_ROWS} elements under one element (limit ${MAX_ROWS})`, details: { limit: MAX_ROWS },
    });
    const wide = '<rows>' + '<row><a>1</a><b>2</b><c>3</c><d>4</d><e>5</e></row>'.repeat(200_000) + '</rows>';
    expect(await fail({ action: 'analyze', content: wide })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400, message: `Too many XML elements: more than ${MAX_XML_ELEMENTS} (limit ${MAX_XML_ELEMENTS})`, details: { limit: MAX_XML_ELEMENTS },
    });
  });

  it('the scan counts no markup inside comments, CDATA, processing instructions, the DOCTYPE or attribute values', async () => {
    const deep = '<a>'.repeat(150);
    const xml = `<?xml version="1.0"?><?pi ${deep}?><!DOCTYPE rows [<!ENTITY e "${deep}">]><rows><!-- ${deep} --><row v="/> ${deep}" w='>'><x><![CDATA[${deep}]]></x></row></rows>`;
    expect(await call({ action: 'parse', content: xml })).toStrictEqual({ action: 'parse', format: 'xml', columns: ['v', 'w', 'x'], rows: [{ v: `/> ${deep}`, w: '>', x: deep }], rowCount: 1 });
  });

  it('an XML error message is cut to about 1 KB, on a whole character', async () => {
    const e = await fail({ action: 'parse', content: `<rows><row>${'😀'.repeat(1000)}<${'😀'.repeat(300_000)}/></row></rows>` });
    expect(e.code).toBe('PARSE_ERROR');
    expect(e.message.length).toBeLessThanOrEqual(1024);
    expect(e.message).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
  });
});

describe('whole characters in messages', () => {
  it('invalid JSON content quoted half a surrogate pair (V8 quotes one UTF-16 unit): the message quotes the whole character', async () => {
    const e = await fail({ action: 'parse', content: '[{"a": 😀}]' });
    expect([e.code, e.message]).toStrictEqual(['PARSE_ERROR', `Invalid JSON at line 1, column 8: Unexpected token '😀', "[{"a": 😀}]" is not valid JSON`]);
  });
});

describe('numbers past the range of a double', () => {
  it('JSON 1e400 converted to CSV became the text "Infinity": refused with 422, in every action', async () => {
    const refused = {
      code: 'PARSE_ERROR', status: 422,
      message: 'JSON array element 2, column "v": a number past the range of a double (±1.8e308); write it as a string',
      details: { row: 2, column: 'v' },
    };
    for (const action of ['convert', 'parse', 'analyze']) {
      expect(await fail({ action, content: '[{"v":1},{"v":1e400}]', to: 'csv' })).toStrictEqual(refused);
    }
    expect(await fail({ action: 'convert', content: '{"v":-1e400}', to: 'xml' })).toMatchObject({ code: 'PARSE_ERROR', message: expect.stringContaining('JSON value 1, column "v"') as unknown });
    // As a string it is kept as written; in CSV, 1e400 is not a number (it stays text).
    expect(await call({ action: 'convert', content: '[{"v":"1e400"}]', to: 'csv' })).toMatchObject({ content: 'v\r\n1e400\r\n' });
    expect(await call({ action: 'parse', content: 'v\n1e400\n' })).toMatchObject({ rows: [{ v: '1e400' }] });
  });

  it('generate with a non-finite number in data (a JSON body with 1e400) is a 400, not the text "Infinity"', async () => {
    expect(await fail({ action: 'generate', data: [{ a: 1 }, { a: Infinity }], format: 'csv' })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400,
      message: 'data row 2, column "a": a number past the range of a double (±1.8e308); write it as a string',
      details: { row: 2, column: 'a' },
    });
  });
});

describe('limits', () => {
  it('refuses more rows than the limit with 400', async () => {
    expect(await fail({ action: 'parse', content: 'v\n' + '1\n'.repeat(MAX_ROWS + 1) })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400, message: `Too many rows: more than ${MAX_ROWS} (limit ${MAX_ROWS})`, details: { limit: MAX_ROWS },
    });
    expect(await fail({ action: 'generate', data: Array.from({ length: MAX_ROWS + 1 }, () => ({})) })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
  });

  it('refuses a million empty columns with 400, in time linear in the columns', async () => {
    expect(await fail({ action: 'parse', content: ','.repeat(1_000_000) })).toStrictEqual({
      code: 'INVALID_INPUT', status: 400, message: 'Too many columns: 1000001 (limit 1000)', details: { limit: 1000 },
    });
    expect(await fail({ action: 'analyze', content: 'a\n"x"' + ','.repeat(1_000_000) })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
    const g = await growth(async (n) => {
      expect(await fail({ action: 'parse', content: ','.repeat(n) })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
      expect(await fail({ action: 'analyze', content: 'a\n"x"' + ','.repeat(n) })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
    }, { from: 10_000, max: 2_000_000 });
    expect(g.ratio, g.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('refuses too many keys in data and JSON', async () => {
    const wide = Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`k${i}`, i]));
    expect(await fail({ action: 'generate', data: [wide] })).toMatchObject({ code: 'INVALID_INPUT', status: 400, message: 'Too many columns: more than 1000 (limit 1000)' });
    expect(await fail({ action: 'parse', content: JSON.stringify([wide]) })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
  });

  it('refuses an answer that would balloon (long column names repeated on every row)', async () => {
    const header = Array.from({ length: 1000 }, (_, i) => `${'n'.repeat(1000)}${i}`).join(',');
    const content = `${header}\n${`${','.repeat(999)}\n`.repeat(1000)}`;
    expect(await fail({ action: 'parse', content })).toMatchObject({ code: 'INVALID_INPUT', status: 400, message: 'The result would exceed 64 MiB' });
    expect(await fail({ action: 'convert', content, to: 'xml' })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
    expect(await fail({ action: 'convert', content, to: 'json' })).toMatchObject({ code: 'INVALID_INPUT', status: 400 });
  });
});

describe('bad input in every field', () => {
  const cases: Array<[string, unknown, string]> = [
    ['body not an object', [1], '(root)'],
    ['action missing', { content: 'a' }, 'action'],
    ['action unknown', { action: 'delete', content: 'a' }, 'action'],
    ['content not a string', { action: 'parse', content: 12 }, 'content'],
    ['content too long', { action: 'parse', content: 'x'.repeat(10 * 1024 * 1024 + 1) }, 'content'],
    ['data not an array', { action: 'generate', data: { a: 1 } }, 'data'],
    ['data row not an object', { action: 'generate', data: [{ a: 1 }, [1, 2]] }, 'data.1'],
    ['format unknown', { action: 'parse', content: 'a', format: 'yaml' }, 'format'],
    ['from unknown', { action: 'convert', content: 'a', from: 'xls', to: 'csv' }, 'from'],
    ['to auto', { action: 'convert', content: 'a', to: 'auto' }, 'to'],
    ['encoding unknown', { action: 'parse', content: 'a', encoding: 'latin1' }, 'encoding'],
    ['delimiter empty', { action: 'parse', content: 'a', delimiter: '' }, 'delimiter'],
    ['delimiter two chars', { action: 'parse', content: 'a', delimiter: ',,' }, 'delimiter'],
    ['delimiter quote', { action: 'parse', content: 'a', delimiter: '"' }, 'delimiter'],
    ['delimiter newline', { action: 'parse', content: 'a', delimiter: '\n' }, 'delimiter'],
    ['header not boolean', { action: 'parse', content: 'a', header: 'yes' }, 'header'],
    ['content missing for parse', { action: 'parse' }, 'content'],
    ['content missing for analyze', { action: 'analyze' }, 'content'],
    ['content missing for convert', { action: 'convert', to: 'csv' }, 'content'],
    ['to missing for convert', { action: 'convert', content: 'a' }, 'to'],
    ['data missing for generate', { action: 'generate' }, 'data'],
  ];
  it.each(cases)('%s → 400 naming the field', async (_name, input, path) => {
    const e = await fail(input);
    expect(e.code).toBe('INVALID_INPUT');
    expect(e.status).toBe(400);
    if (path !== '(root)') expect((e.details as Array<{ path: string }>).map((d) => d.path)).toContain(path);
  });
});

describe('the published patterns (content with encoding base64, delimiter)', () => {
  // Regression: with encoding base64 the schema allowed any content, so a schema-valid request
  // could be refused as "not valid base64". Agreement with the decoder (a 422 for bytes that are
  // not text is not a refusal of the base64).
  test.prop([fc.string({ unit: fc.constantFrom(...'Az09+/_-= \t\n\r\u00a0\u000b.'), maxLength: 14 })], { numRuns: 2000, seed: 29 })('agrees with decodeContent', (content) => {
    let valid = true;
    try {
      decodeContent(content, 'base64');
    } catch (err) {
      valid = (err as ToolError).code !== 'INVALID_INPUT';
    }
    expect(new RegExp(BASE64_CONTENT_PATTERN, 'u').test(content), JSON.stringify(content)).toBe(valid);
  });

  it('delimiter: the published pattern agrees with the validation', () => {
    const pattern = new RegExp((z.toJSONSchema(fileProcess.input, { io: 'input' }) as unknown as { properties: { delimiter: { pattern: string } } }).properties.delimiter.pattern, 'u');
    const candidates = ['"', '\r', '\n', ',', ';', '\t', '|', ' ', '\u0000', 'é', '\u2028', '\uffff', '😀', '', ',,'];
    const disagree = candidates.filter((d) => pattern.test(d) !== fileProcess.input.safeParse({ action: 'parse', content: 'a', delimiter: d }).success);
    expect(disagree).toStrictEqual([]);
  });
});

describe('progress and schema', () => {
  it('reports increasing progress up to 100 while reading a large CSV', async () => {
    const seen: number[] = [];
    const content = 'a,b\n' + '1,x\n'.repeat(40_000);
    const r = await call({ action: 'analyze', content }, async (p, total) => {
      expect(total).toBe(100);
      seen.push(p);
    });
    expect(r.rowCount).toBe(40_000);
    expect(seen.length).toBeGreaterThan(4);
    expect(seen).toStrictEqual([...seen].sort((a, b) => a - b));
    expect(seen.at(-1)).toBe(100);
  });

  it('has input and output JSON Schemas that describe every action', () => {
    const input = z.toJSONSchema(fileProcess.input, { io: 'input' }) as { properties: Record<string, { description?: string }> };
    for (const [k, p] of Object.entries(input.properties)) expect(p.description, k).toBeTruthy();
    const output = z.toJSONSchema(fileProcess.output) as { type: string; properties: Record<string, unknown>; required: string[] };
    expect(output.type).toBe('object');
    expect(Object.keys(output.properties).sort()).toStrictEqual(['action', 'columnCount', 'columns', 'content', 'delimiter', 'format', 'from', 'rowCount', 'rows', 'to']);
    expect(output.required.sort()).toStrictEqual(['action', 'rowCount']);
    expect(fileProcess.input.safeParse(fileProcess.example).success).toBe(true);
  });
});
