import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import YAML from 'yaml';
import { useToolHarness } from '../../../test/harness.js';
import { BASE_MAX_DIGITS, baseConvert, valuePattern } from './base-convert.js';
import { htmlEntity } from './html-entity.js';
import { JSON_YAML_MAX_OUTPUT, jsonYamlConvert, textSize } from './json-yaml-convert.js';
import { jsonErrorOffset } from '../../lib/json-locate.js';
import { costRatio } from '../../../test/cpu-cost.js';
import { growth, GROWTH_TIMEOUT_MS, MAX_GROWTH } from '../../../test/growth.js';

const t = useToolHarness();
const run = t.call;
const fail = t.failure;

describe('json_yaml_convert', () => {
  it('auto-detects JSON and writes YAML', async () => {
    expect(await run(jsonYamlConvert, { input: '{"a":[1,{"b":null}],"s":"x: y"}' })).toStrictEqual({
      result: 'a:\n  - 1\n  - b: null\ns: "x: y"\n',
      direction: 'json2yaml',
    });
  });

  it('auto-detects YAML and writes JSON with the indent asked for', async () => {
    expect(await run(jsonYamlConvert, { input: 'a: 1\nb: [x, y]\n', indent: 4 })).toStrictEqual({
      result: '{\n    "a": 1,\n    "b": [\n        "x",\n        "y"\n    ]\n}',
      direction: 'yaml2json',
    });
  });

  it('honours an explicit direction', async () => {
    expect(await run(jsonYamlConvert, { input: '{"a":1}', direction: 'yaml2json' })).toStrictEqual({ result: '{\n  "a": 1\n}', direction: 'yaml2json' });
  });

  it('turns several YAML documents into an array', async () => {
    expect(await run(jsonYamlConvert, { input: 'a: 1\n---\nb: 2\n', indent: 1 })).toStrictEqual({
      result: '[\n {\n  "a": 1\n },\n {\n  "b": 2\n }\n]',
      direction: 'yaml2json',
    });
  });

  it('reports JSON errors with line and column', async () => {
    const e = await fail(jsonYamlConvert, { input: '{\n  "a": 1\n  "b": 2\n}', direction: 'json2yaml' });
    expect(e.code).toBe('PARSE_ERROR');
    expect(e.details).toStrictEqual({ line: 3, column: 3 });
  });

  it('reports YAML errors with line and column', async () => {
    const e = await fail(jsonYamlConvert, { input: 'a: 1\nb: [1, 2\nc: 3', direction: 'yaml2json' });
    expect(e.code).toBe('PARSE_ERROR');
    expect(e.details).toMatchObject({ line: expect.any(Number), column: expect.any(Number) });
  });

  it('refuses duplicate YAML keys', async () => {
    const e = await fail(jsonYamlConvert, { input: 'a: 1\na: 2', direction: 'yaml2json' });
    expect(e.code).toBe('PARSE_ERROR');
  });

  it('refuses duplicate YAML keys in nested maps and flow maps, with the position of the second key', async () => {
    const nested = await fail(jsonYamlConvert, { input: 'top:\n  x: 1\n  y: 2\n  x: 3\n', direction: 'yaml2json' });
    expect([nested.code, nested.message, nested.details]).toStrictEqual(['PARSE_ERROR', 'Invalid YAML: Map keys must be unique at line 4, column 3', { line: 4, column: 3 }]);
    const flow = await fail(jsonYamlConvert, { input: '- {a: 1, b: 2, a: 3}', direction: 'yaml2json' });
    expect([flow.code, flow.details]).toStrictEqual(['PARSE_ERROR', { line: 1, column: 16 }]);
    // Keys equal as scalars collide; 1 and '1' are different keys, as in yaml's own rule.
    expect(await run(jsonYamlConvert, { input: "1: a\n'1': b", direction: 'yaml2json', indent: 1 })).toStrictEqual({ result: '{\n "1": "b"\n}', direction: 'yaml2json' });
  });

  // Regression: yaml's uniqueKeys compares each key with every earlier one (40k keys blocked
  // the event loop for 6 s), and prettyErrors copies the whole line for every error (80k
  // anchors on one line: 14 s). Both are linear now: timed at n and 4n (test/growth.ts), which
  // a loaded machine slows alike, where the quadratic versions grow ≈ 16×.
  it('a YAML map of 40k keys and a line of 80k errors convert in linear time', async () => {
    const keys = (n: number) => Array.from({ length: n }, (_, i) => `k${i}: ${i}`).join('\n');
    const convertKeys = async (n: number) => {
      const r = (await run(jsonYamlConvert, { input: keys(n), direction: 'yaml2json' })) as { result: string };
      expect(Object.keys(JSON.parse(r.result) as object).length).toBe(n);
    };
    // From 5,000 keys: below that the old quadratic check hides behind the linear parse.
    const k = await growth(convertKeys, { from: 5_000, max: 80_000 });
    expect(k.ratio, `keys: ${k.text}`).toBeLessThan(MAX_GROWTH);
    const anchors = async (n: number) => {
      const e = await fail(jsonYamlConvert, { input: '&a '.repeat(n), direction: 'yaml2json' });
      expect([e.code, e.message, e.details]).toStrictEqual(['PARSE_ERROR', 'Invalid YAML: A node can have at most one anchor at line 1, column 4', { line: 1, column: 4 }]);
    };
    const a = await growth(anchors, { from: 10_000, max: 330_000 });
    expect(a.ratio, `anchors: ${a.text}`).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('refuses a YAML alias bomb (billion laughs) without expanding it', async () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    // The same document without aliases: ten lists of nine strings.
    const flat = [levels[0]!];
    for (let i = 1; i < 10; i++) {
      const p = String.fromCharCode(96 + i);
      const n = String.fromCharCode(97 + i);
      levels.push(`${n}: &${n} [${Array(9).fill(`*${p}`).join(',')}]`);
      flat.push(`${n}: &${n} [${Array(9).fill('"lol"').join(',')}]`);
    }
    const refuse = async () => {
      const e = await fail(jsonYamlConvert, { input: levels.join('\n') });
      expect(e.code).toBe('PARSE_ERROR');
      expect(e.message).toMatch(/alias/i);
    };
    // Expanded, this document is 9^10 strings: minutes and gigabytes. Refused, it costs about
    // what converting the flat document costs (CPU time, so a loaded machine slows both alike);
    // expanding even 9^6 of it before refusing costs hundreds of times more.
    const c = await costRatio(refuse, () => run(jsonYamlConvert, { input: flat.join('\n') }));
    expect(c.ratio, c.text).toBeLessThan(MAX_GROWTH);
  }, GROWTH_TIMEOUT_MS);

  it('refuses nesting deeper than the limit with a 422, not a stack overflow', async () => {
    const deepJson = '['.repeat(10_000) + ']'.repeat(10_000);
    expect((await fail(jsonYamlConvert, { input: deepJson })).code).toBe('PARSE_ERROR');
    const deepYaml = '['.repeat(10_000) + ']'.repeat(10_000);
    expect((await fail(jsonYamlConvert, { input: deepYaml, direction: 'yaml2json' })).code).toBe('PARSE_ERROR');
  });

  it('regression: 10k-deep YAML no longer overflows the stack inside the regexp compiler (process crash)', async () => {
    for (const input of ['['.repeat(10_000) + ']'.repeat(10_000), '- '.repeat(10_000) + 'a', '{a: '.repeat(5_000) + '1' + '}'.repeat(5_000)]) {
      const e = await fail(jsonYamlConvert, { input, direction: 'yaml2json' });
      expect(e.code).toBe('PARSE_ERROR');
      expect(e.message).toBe('YAML is nested too deeply (limit 256 levels)');
    }
  });

  it('yaml2json of nested flow YAML ([×255, many items) gave 259 MB of output: refused with 400 before the text is built', async () => {
    const input = '['.repeat(255) + Array(70_000).fill('1').join(',') + ']'.repeat(255);
    const e = await fail(jsonYamlConvert, { input, direction: 'yaml2json' });
    expect([e.code, e.message, e.details]).toStrictEqual([
      'INVALID_INPUT',
      `The result would be ${JSON.stringify(JSON.parse(input), null, 2).length} characters; the limit is ${JSON_YAML_MAX_OUTPUT} (16 MiB). Convert smaller parts, or with a smaller indent`,
      { limit: JSON_YAML_MAX_OUTPUT },
    ]);
    // Indentation is what grows: the same items one level deep convert.
    const flat = (await run(jsonYamlConvert, { input: `[${Array(70_000).fill('1').join(',')}]`, direction: 'yaml2json' })) as { result: string };
    expect(flat.result.length).toBe(70_000 * 5 + 2);
  });

  it('aliases repeating a large anchor within the alias limit were expanded into the output unmeasured: counted, refused', async () => {
    const yaml = `a: &a [${Array(40_000).fill('x').join(',')}]\nb: [${Array(50).fill('*a').join(', ')}]`;
    const e = await fail(jsonYamlConvert, { input: yaml, direction: 'yaml2json' });
    expect([e.code, e.details]).toStrictEqual(['INVALID_INPUT', { limit: JSON_YAML_MAX_OUTPUT }]);
    // Five aliases stay under the cap and convert.
    const ok = (await run(jsonYamlConvert, { input: `a: &a [1, 2]\nb: [${Array(5).fill('*a').join(', ')}]`, direction: 'yaml2json', indent: 1 })) as { result: string };
    expect(JSON.parse(ok.result)).toStrictEqual({ a: [1, 2], b: Array(5).fill([1, 2]) });
  });

  it('json2yaml of deeply nested JSON with many items is refused by its size estimate, not built', async () => {
    const input = '['.repeat(200) + Array(50_000).fill('"x"').join(',') + ']'.repeat(200);
    expect((await fail(jsonYamlConvert, { input, direction: 'json2yaml' })).code).toBe('INVALID_INPUT');
  });

  test.prop([fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 1, max: 8 })])('textSize is the exact length of the JSON text', (value, indent) => {
    expect(textSize(value, indent)).toBe(JSON.stringify(value, null, indent).length);
  });

  test.prop([fc.jsonValue({ maxDepth: 5 }), fc.integer({ min: 1, max: 8 })])('the YAML estimate stays within a small factor of the YAML text', (value, indent) => {
    const actual = YAML.stringify(value, { indent, lineWidth: 0, aliasDuplicateObjects: false }).length;
    const estimate = textSize(value, indent, true);
    expect(estimate + 16).toBeGreaterThanOrEqual(actual / 2);
    // The estimate is JSON-shaped: each nesting level costs `indent` on every line (and its
    // brackets), where YAML's compact `- - x` costs two characters, so it over-counts by a factor
    // that grows with the indent (seen: 6.3× for [["DF"]] at indent 8; 3× + 16 failed on
    // [[""]] at 7, seed -432383844). Bound: (indent + 2)×, which 400k samples never exceeded.
    expect(estimate).toBeLessThanOrEqual(actual * (indent + 2) + 16);
  });

  it('json_yaml_convert errors quoted half a surrogate pair (V8 quotes one UTF-16 unit): whole characters only', async () => {
    const loneHalf = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
    const json = await fail(jsonYamlConvert, { input: '{"a": 😀}', direction: 'json2yaml' });
    expect([json.code, json.message]).toStrictEqual(['PARSE_ERROR', `Invalid JSON at line 1, column 7: Unexpected token '😀', "{"a": 😀}" is not valid JSON`]);
    const long = await fail(jsonYamlConvert, { input: `{"a": ${'😀'.repeat(40)}}`, direction: 'json2yaml' });
    expect(long.message).not.toMatch(loneHalf);
    expect(long.message).toContain(`'😀'`);
    for (const input of ['a: [😀', '😀: &a &b x', `- "${'😀'.repeat(30)}`, '{😀: 1, 😀: 2}']) {
      const e = await fail(jsonYamlConvert, { input, direction: 'yaml2json' });
      expect([e.code, loneHalf.test(e.message)], e.message).toStrictEqual(['PARSE_ERROR', false]);
    }
  });

  it('keeps __proto__ keys as data without polluting Object.prototype', async () => {
    const r = await run(jsonYamlConvert, { input: '{"__proto__":{"polluted":1},"constructor":{"prototype":{"x":1}}}' });
    expect(r.result).toBe('__proto__:\n  polluted: 1\nconstructor:\n  prototype:\n    x: 1\n');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects bad field types and ranges', async () => {
    for (const input of [{}, { input: 1 }, { input: 'a', direction: 'x' }, { input: 'a', indent: 9 }, { input: 'a', indent: 1.5 }]) {
      expect((await fail(jsonYamlConvert, input)).code).toBe('INVALID_INPUT');
    }
  });
});

describe('json error locator', () => {
  it('finds the first error offset, or -1 for valid JSON', () => {
    expect(jsonErrorOffset('{"a":[1,2,{"b":"c"}]}')).toBe(-1);
    expect(jsonErrorOffset('  [1, 2 ')).toBe(8);
    expect(jsonErrorOffset('{"a" 1}')).toBe(5);
    expect(jsonErrorOffset('[1,]')).toBe(3);
    expect(jsonErrorOffset('"\\x"')).toBe(2);
    expect(jsonErrorOffset('{} x')).toBe(3);
    expect(jsonErrorOffset('')).toBe(0);
  });
});

describe('base_convert', () => {
  it('converts between every base', async () => {
    expect(await run(baseConvert, { value: '255' })).toStrictEqual({ input: '255', from: 'dec', dec: '255', bin: '11111111', oct: '377', hex: 'ff' });
    expect(await run(baseConvert, { value: '0o777', from: 'oct' })).toStrictEqual({ input: '0o777', from: 'oct', dec: '511', bin: '111111111', oct: '777', hex: '1ff' });
    expect(await run(baseConvert, { value: '0', from: 'bin' })).toStrictEqual({ input: '0', from: 'bin', dec: '0', bin: '0', oct: '0', hex: '0' });
  });

  it('handles signs, prefixes, separators and BigInt sizes', async () => {
    expect(await run(baseConvert, { value: '-0xDEAD_BEEF', from: 'hex' })).toMatchObject({ dec: '-3735928559', hex: '-deadbeef' });
    expect(await run(baseConvert, { value: '+1_000_000' })).toMatchObject({ dec: '1000000', hex: 'f4240' });
    const big = '123456789012345678901234567890123456789';
    expect(await run(baseConvert, { value: big })).toMatchObject({ dec: big, hex: BigInt(big).toString(16) });
    expect(await run(baseConvert, { value: ' 42 ' })).toMatchObject({ dec: '42' });
  });

  it('converts a 100k-digit number', async () => {
    const r = await run(baseConvert, { value: '7'.repeat(100_000) });
    expect((r.dec as string).length).toBe(100_000);
  });

  it('refuses bad digits, wrong prefixes, misplaced separators and empty values', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ value: '12a' }, 'PARSE_ERROR'],
      [{ value: '102', from: 'bin' }, 'PARSE_ERROR'],
      [{ value: '0x10', from: 'dec' }, 'PARSE_ERROR'],
      [{ value: '0b10', from: 'oct' }, 'PARSE_ERROR'],
      [{ value: '1__0' }, 'PARSE_ERROR'],
      [{ value: '_10' }, 'PARSE_ERROR'],
      [{ value: '-' }, 'PARSE_ERROR'],
      [{ value: '0x', from: 'hex' }, 'PARSE_ERROR'],
      [{ value: '1.5' }, 'PARSE_ERROR'],
      [{ value: '' }, 'INVALID_INPUT'],
      [{ value: 12 }, 'INVALID_INPUT'],
      [{ value: '1', from: 'b64' }, 'INVALID_INPUT'],
      [{ value: '1'.repeat(100_001) }, 'INVALID_INPUT'],
    ];
    for (const [input, code] of cases) expect((await fail(baseConvert, input)).code, JSON.stringify(input).slice(0, 60)).toBe(code);
  });

  describe('the published value pattern of each base agrees with the parser', () => {
    // Regression: the schema allowed 200,010 characters against a 100,000-digit limit, so a
    // schema-valid value could be refused. Now schema-valid ⇔ converted, per base.
    const converts = async (value: string, from: string) => {
      try {
        await run(baseConvert, { value, from });
        return true;
      } catch {
        return false;
      }
    };
    const agree = async (value: string, from: 'dec' | 'bin' | 'oct' | 'hex') => {
      const published = new RegExp(valuePattern(from), 'u').test(value);
      expect(published, `${from} ${JSON.stringify(value.slice(0, 40))} (${value.length} chars)`).toBe(await converts(value, from));
    };
    const n = BASE_MAX_DIGITS;

    it('at the digit limit, with separators, sign, prefix and space', async () => {
      for (const [from, digit, prefix] of [['dec', '7', ''], ['bin', '1', '0b'], ['oct', '7', '0O'], ['hex', 'f', '0x']] as const) {
        for (const v of [digit.repeat(n), digit.repeat(n + 1), `${digit}_`.repeat(n - 1) + digit, `${digit}_`.repeat(n) + digit, ` -${prefix}${digit.repeat(n)}\n`]) await agree(v, from);
      }
      // "0b" is two hex digits: 0b + 100,000 digits is over the limit for hex, not for bin.
      await agree(`0b${'1'.repeat(n)}`, 'hex');
      await agree(`0b${'1'.repeat(n)}`, 'bin');
    });

    test.prop([fc.constantFrom('dec', 'bin', 'oct', 'hex'), fc.string({ unit: fc.constantFrom(...'0179aFxXbBoO_+- \t\u00a0\ufeffz'), maxLength: 12 })], { numRuns: 400, seed: 29 })(
      'on short values over the characters that matter',
      async (from, value) => agree(value, from),
    );
  });

  it('base_convert "12😀" quoted half a surrogate pair ("\\ud83d"): the message quotes the whole character', async () => {
    const e = await fail(baseConvert, { value: '12😀' });
    expect([e.code, e.message, e.details]).toStrictEqual(['PARSE_ERROR', 'Invalid dec digit "😀" at position 3', { position: 3 }]);
    expect((await fail(baseConvert, { value: 'ff𝟘', from: 'hex' })).message).toBe('Invalid hex digit "𝟘" at position 3');
  });
});

describe('html_entity', () => {
  it('encodes the five special characters', async () => {
    expect(await run(htmlEntity, { content: `<a href="x">Tom & 'Jerry'</a>` })).toStrictEqual({
      result: '&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;',
      action: 'encode',
    });
  });

  it('decodes HTML5 named entities and numeric references', async () => {
    expect(await run(htmlEntity, { input: '&lt;&NotNestedGreaterGreater;&hearts;&#233;&#x1F600;&amp;amp;', action: 'decode' })).toStrictEqual({
      result: '<⪢̸♥é😀&amp;',
      action: 'decode',
    });
  });

  it('auto decodes text with entities and encodes text without', async () => {
    expect(await run(htmlEntity, { input: 'a &amp; b' })).toStrictEqual({ result: 'a & b', action: 'decode' });
    expect(await run(htmlEntity, { input: 'a & b' })).toStrictEqual({ result: 'a &amp; b', action: 'encode' });
  });

  it('defaults to encode with content and accepts decode with it', async () => {
    expect(await run(htmlEntity, { content: '&amp;' })).toStrictEqual({ result: '&amp;amp;', action: 'encode' });
    expect(await run(htmlEntity, { content: '&amp;', action: 'decode' })).toStrictEqual({ result: '&', action: 'decode' });
  });

  it('accepts api_key in the body', async () => {
    expect(await run(htmlEntity, { content: 'x', api_key: 'dtb_x' })).toStrictEqual({ result: 'x', action: 'encode' });
  });

  it('needs exactly one of input and content', async () => {
    expect((await fail(htmlEntity, {})).code).toBe('INVALID_INPUT');
    expect((await fail(htmlEntity, { input: 'a', content: 'b' })).code).toBe('INVALID_INPUT');
    expect((await fail(htmlEntity, { input: 'a', action: 'rot13' })).code).toBe('INVALID_INPUT');
    expect((await fail(htmlEntity, { input: ['a'] })).code).toBe('INVALID_INPUT');
  });
});
