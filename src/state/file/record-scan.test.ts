import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { fieldNames, scanRecord } from './record-scan.js';

const FIELDS = ['code', 'n', 'b'];
const names = fieldNames(FIELDS)!;

/**
 * The scan's promise: when it answers true, JSON.parse takes the same text and gives an object
 * with the same values for the fields asked.
 */
function agrees(bytes: Buffer, start = 0, end = bytes.length): boolean {
  const out: unknown[] = [];
  const ok = scanRecord(bytes, start, end, names, out);
  if (!ok) return false;
  const rec = JSON.parse(bytes.toString('utf8', start, end)) as Record<string, unknown>;
  expect(typeof rec === 'object' && rec !== null && !Array.isArray(rec)).toBe(true);
  FIELDS.forEach((f, i) => expect(Object.is(out[i], rec[f]), `${f}: ${String(out[i])} vs ${String(rec[f])} in ${bytes.toString('utf8', start, end)}`).toBe(true));
  return true;
}

const scalar = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
);
/** Records: random members, with the fields asked among them (scalars), maybe twice. */
const record = fc
  .tuple(
    // Other members: any key but the fields asked (whose containers the scan leaves to JSON.parse).
    fc.dictionary(fc.string({ unit: 'binary', maxLength: 6 }).filter((k) => !FIELDS.includes(k)), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
    fc.array(fc.tuple(fc.constantFrom(...FIELDS), scalar), { maxLength: 5 }),
  )
  .map(([rest, mine]) => {
    const members = Object.entries(rest).map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`);
    for (const [k, v] of mine) members.splice(members.length ? Math.floor(members.length / 2) : 0, 0, `${JSON.stringify(k)}:${JSON.stringify(v)}`);
    return `{${members.join(',')}}`;
  });

/** JSON's four whitespace characters in every place one may go (outside strings). */
function spaced(text: string, ws: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    out += c;
    if (inString) {
      if (c === '\\') out += text[++i];
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    if (!inString && ',:{}[]'.includes(c)) out += ws;
  }
  return ws + out + ws;
}

const edit = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('insert', 'delete', 'replace'),
  byte: fc.constantFrom(0x00, 0x0a, 0x1f, 0x20, 0x22, 0x2c, 0x2d, 0x2e, 0x30, 0x31, 0x3a, 0x45, 0x5b, 0x5c, 0x5d, 0x65, 0x75, 0x7b, 0x7d, 0x7f, 0x80, 0xc3, 0xe2, 0xef, 0xff),
});

function mutate(text: string, edits: Array<{ at: number; kind: string; byte: number }>): Buffer {
  let b = Buffer.from(text);
  for (const e of edits) {
    const at = b.length === 0 ? 0 : e.at % b.length;
    const one = Buffer.from([e.byte]);
    if (e.kind === 'insert') b = Buffer.concat([b.subarray(0, at), one, b.subarray(at)]);
    else if (e.kind === 'delete') b = Buffer.concat([b.subarray(0, at), b.subarray(at + 1)]);
    else b = Buffer.concat([b.subarray(0, at), one, b.subarray(at + 1)]);
  }
  return b;
}

describe('scanRecord', () => {
  test.prop([record], { numRuns: 2000 })('reads every record JSON.stringify writes, as JSON.parse does', (text) => {
    expect(agrees(Buffer.from(text))).toBe(true);
  });

  test.prop([record, fc.constantFrom(' ', '\t', '\r', '\n', ' \r\n\t')], { numRuns: 500 })('takes whitespace where JSON allows it', (text, ws) => {
    expect(agrees(Buffer.from(spaced(text, ws)))).toBe(true);
  });

  test.prop([record, fc.array(edit, { minLength: 1, maxLength: 3 })], { numRuns: 5000 })('never accepts what JSON.parse refuses, nor reads another value', (text, edits) => {
    const b = mutate(text, edits);
    let valid = true;
    try {
      const r = JSON.parse(b.toString('utf8')) as unknown;
      valid = typeof r === 'object' && r !== null && !Array.isArray(r);
    } catch {
      valid = false;
    }
    if (!valid) expect(scanRecord(b, 0, b.length, names, [])).toBe(false);
    else agrees(b);
  });

  test.prop([fc.uint8Array({ maxLength: 40 })], { numRuns: 3000 })('random bytes: only valid JSON objects pass', (bytes) => {
    const b = Buffer.concat([Buffer.from('{"code":'), Buffer.from(bytes)]);
    let valid = true;
    try {
      JSON.parse(b.toString('utf8'));
    } catch {
      valid = false;
    }
    if (!valid) expect(scanRecord(b, 0, b.length, names, [])).toBe(false);
    else agrees(b);
  });

  it('reads a slice of a larger buffer, and only that slice', () => {
    const b = Buffer.from('xx{"code":"a1","n":-0.5e2}yy');
    expect(agrees(b, 2, b.length - 2)).toBe(true);
    expect(scanRecord(b, 2, b.length - 1, names, [])).toBe(false);
    expect(scanRecord(b, 2, b.length - 3, names, [])).toBe(false);
  });

  it.each([
    ['{}', true],
    [' {"code":"x"} ', true],
    ['{"code":"\\u00e9\\n\\"q\\""}', true],
    ['{"code":"é"}', true],
    ['{"code":"a","code":"b"}', true],
    ['{"co\\u0064e":"escaped key","\\u0000":1}', true],
    ['{"n":-0}', true],
    ['{"n":1e400}', true],
    ['{"n":0.5E-3}', true],
    ['{"x":{"code":"inner"},"code":"outer"}', true],
    ['{"x":[1,{"y":[[]]},"]}"],"b":true}', true],
  ])('accepts %s', (text, ok) => {
    expect(agrees(Buffer.from(text))).toBe(ok);
  });

  it.each(['[]', '"code"', '1', 'null', '[{"code":"x"}]'])('refuses %j: JSON, not an object', (text) => {
    expect(() => JSON.parse(text)).not.toThrow();
    expect(scanRecord(Buffer.from(text), 0, Buffer.byteLength(text), names, [])).toBe(false);
  });

  it.each([
    '',
    '{',
    '{"code":"x"',
    '{"code":"x",}',
    '{"code" "x"}',
    '{"code":"x"}x',
    '{"code":"x"}{}',
    '{code:"x"}',
    "{'code':'x'}",
    '{"n":01}',
    '{"n":1.}',
    '{"n":.5}',
    '{"n":+1}',
    '{"n":-}',
    '{"n":1e}',
    '{"n":0x10}',
    '{"b":tru}',
    '{"b":nul}',
    '{"b":True}',
    '{"code":"\\x"}',
    '{"code":"\\u12"}',
    '{"code":"a\tb"}',
    '{"code":"a\u0000b"}',
    '\ufeff{"code":"x"}',
    '{"x":[1,]}',
    '{"x":[1 2]}',
    '{"x":{"y"}}',
    '{"x":{"y":1,}}',
  ])('refuses %j', (text) => {
    expect(() => JSON.parse(text)).toThrow();
    expect(scanRecord(Buffer.from(text), 0, Buffer.byteLength(text), names, [])).toBe(false);
  });

  it('leaves to JSON.parse what it does not read itself', () => {
    // A field asked whose value is a container, nesting past its depth.
    for (const text of ['{"code":{"a":1}}', '{"n":[1]}', '{"co\\u0064e":[]}', `{"x":${'['.repeat(100)}${']'.repeat(100)}}`]) {
      expect(() => JSON.parse(text)).not.toThrow();
      expect(scanRecord(Buffer.from(text), 0, text.length, names, [])).toBe(false);
    }
    // Deep nesting never overflows the stack.
    const deep = `{"x":${'['.repeat(200_000)}}`;
    expect(scanRecord(Buffer.from(deep), 0, deep.length, names, [])).toBe(false);
  });

  it('reads only plain ASCII field names', () => {
    expect(fieldNames(['code', 'creatorDay'])).toBeDefined();
    expect(fieldNames(['é'])).toBeUndefined();
    expect(fieldNames(['a"b'])).toBeUndefined();
    expect(fieldNames(['a\\b'])).toBeUndefined();
  });
});
