/**
 * The data family against its standards' own test suites, vendored under vendor/ (versions,
 * commits and licenses in vendor/<suite>/README.md): the JSONPath Compliance Test Suite (RFC
 * 9535), the JMESPath compliance tests and the json-patch tests (RFC 6902). Every case runs
 * through the tool's handler (the normalized paths and the patch's atomicity are ours, not the
 * library's). A case not run is listed below with its reason; the counts are asserted so that a
 * case silently dropped fails the test.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ToolError } from '../src/errors.js';
import { applyJsonPatch } from '../src/tools/data/json-patch.js';
import { jsonQuery } from '../src/tools/data/json-query.js';

const vendor = path.join(import.meta.dirname, '..', 'vendor');
const readJson = <T>(...p: string[]): T => JSON.parse(fs.readFileSync(path.join(vendor, ...p), 'utf8')) as T;

/** The tool's answer, or the ToolError it threw. */
function query(document: unknown, q: string, language: 'jsonpath' | 'jmespath'): { result?: unknown; paths?: string[]; error?: ToolError } {
  try {
    const out = jsonQuery.handler(jsonQuery.input.parse({ input: JSON.stringify(document), query: q, language }), {} as never) as { result: unknown; paths?: string[] };
    return out.paths ? { result: out.result, paths: out.paths } : { result: out.result };
  } catch (err) {
    if (err instanceof ToolError) return { error: err };
    throw err;
  }
}

interface CtsCase {
  name: string;
  selector: string;
  document?: unknown;
  result?: unknown[];
  result_paths?: string[];
  results?: unknown[][];
  results_paths?: string[][];
  invalid_selector?: boolean;
}

describe('JSONPath Compliance Test Suite (RFC 9535), vendor/jsonpath-cts', () => {
  const cts = readJson<{ tests: CtsCase[] }>('jsonpath-cts', 'cts.json').tests;

  it('every case passes: values and normalized paths, one of the allowed orders where the result is not deterministic; invalid selectors are 422s', () => {
    const failed: string[] = [];
    for (const c of cts) {
      const got = query(c.document ?? null, c.selector, 'jsonpath');
      let ok: boolean;
      if (c.invalid_selector) ok = got.error?.code === 'PARSE_ERROR' && got.error.status === 422;
      else if (got.error) ok = false;
      else {
        const results = c.results ?? [c.result ?? []];
        const paths = c.results_paths ?? (c.result_paths ? [c.result_paths] : undefined);
        ok = results.some((r, i) => {
          try {
            expect(got.result).toStrictEqual(r);
            if (paths) expect(got.paths).toStrictEqual(paths[i]);
            return true;
          } catch {
            return false;
          }
        });
      }
      if (!ok) failed.push(c.name);
    }
    expect(failed).toStrictEqual([]);
    expect(cts.length).toBe(703);
  });
});

interface JmesCase {
  expression: string;
  result?: unknown;
  error?: string;
  bench?: string;
  comment?: string;
}

/**
 * Cases jmespath 0.16.0 (the JavaScript reference implementation, last released 2017) gets
 * wrong: the suite was extended after its release. They run, and must keep failing exactly so:
 * one that starts passing (a library upgrade) fails this test until it is taken off the list.
 */
const JMESPATH_KNOWN_FAILURES: Record<string, string> = {
  'boolean.json: emptylist < one': 'ordering a non-number must give null (added to the spec after 0.16); the library answers true',
  'boolean.json: emptylist < nullvalue': 'same: the library answers false instead of null',
  'boolean.json: emptylist < boolvalue': 'same: the library answers false instead of null',
  'boolean.json: one < boolvalue': 'same: the library answers false instead of null',
  'syntax.json: [:::]': 'a slice with three colons must be a syntax error; the library accepts it',
};

describe('JMESPath compliance tests, vendor/jmespath-tests', () => {
  const dir = path.join(vendor, 'jmespath-tests', 'tests');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

  it('every case but the listed ones passes (results, and errors as 422s); benchmark cases are run only for their answer', () => {
    let run = 0;
    let benches = 0;
    const failed: string[] = [];
    for (const file of files) {
      for (const group of readJson<Array<{ given: unknown; cases: JmesCase[] }>>('jmespath-tests', 'tests', file)) {
        for (const c of group.cases) {
          const got = query(group.given, c.expression, 'jmespath');
          // benchmarks.json has no expected results ("bench" cases, for timing): each must answer, not fail.
          if (c.bench) {
            benches++;
            if (got.error) failed.push(`${file}: ${c.expression}`);
            continue;
          }
          run++;
          const ok = c.error !== undefined ? got.error?.status === 422 : got.error === undefined && JSON.stringify(got.result) === JSON.stringify(c.result ?? null);
          if (!ok) failed.push(`${file}: ${c.expression}`);
        }
      }
    }
    expect(failed.sort()).toStrictEqual(Object.keys(JMESPATH_KNOWN_FAILURES).sort());
    expect([run, benches]).toStrictEqual([892, 16]);
  });
});

interface PatchCase {
  comment?: string;
  doc: unknown;
  patch: unknown;
  expected?: unknown;
  error?: string;
  disabled?: boolean;
}

describe('json-patch tests (RFC 6902), vendor/json-patch-tests', () => {
  for (const file of ['tests.json', 'spec_tests.json']) {
    it(`${file}: every enabled case passes (results compared as JSON values; errors are 422s naming the operation)`, () => {
      const cases = readJson<PatchCase[]>('json-patch-tests', file);
      const failed: string[] = [];
      let disabled = 0;
      cases.forEach((c, i) => {
        // The suite's own "disabled" flag: cases its authors mark as not required (e.g. duplicate
        // keys in the patch, which JSON.parse cannot even see).
        if (c.disabled) return void disabled++;
        let out: unknown;
        let err: unknown;
        try {
          out = applyJsonPatch(structuredClone(c.doc), c.patch);
        } catch (e) {
          err = e;
        }
        let ok: boolean;
        if (c.error !== undefined) ok = err instanceof ToolError && err.status === 422;
        else if (err) ok = false;
        else {
          try {
            if ('expected' in c) expect(out).toEqual(c.expected);
            ok = true;
          } catch {
            ok = false;
          }
        }
        if (!ok) failed.push(`#${i} ${c.comment ?? ''}: ${err instanceof Error ? err.message : ''}`);
      });
      expect(failed).toStrictEqual([]);
      expect([cases.length, disabled]).toStrictEqual(file === 'tests.json' ? [95, 3] : [17, 1]);
    });
  }

  it('an error names the index of the failing operation (the first that fails; no result is answered)', () => {
    const doc = { a: 1 };
    let err: unknown;
    try {
      applyJsonPatch(doc, [{ op: 'add', path: '/b', value: 2 }, { op: 'remove', path: '/missing' }]);
    } catch (e) {
      err = e;
    }
    expect(err instanceof ToolError && err.toJSON()).toStrictEqual({
      code: 'PARSE_ERROR',
      message: 'Operation 1 (remove "/missing") failed: the target location does not exist (or an array index is out of range)',
      details: { operation: 1, reason: 'missing' },
    });
  });
});
