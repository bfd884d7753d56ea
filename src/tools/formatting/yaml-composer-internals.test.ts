// Guards what json-yaml-convert.ts reads of yaml's private Composer state (`onError`, `errors`,
// `doc`), the reason package.json pins yaml to a patch range. If a yaml release fails this file,
// do not widen the range: rework yamlDocuments() first.
import { Composer, Parser, parseAllDocuments, type YAMLError } from 'yaml';
import { describe, expect, it } from 'vitest';
import { yamlDocuments } from './json-yaml-convert.js';

type Internals = { onError: (source: unknown, code: string, message: string, warning?: boolean) => void; errors: unknown[]; doc: unknown };

/** The first error yaml's public API reports, in document order, then the stream's own. */
function publicFirstError(input: string): YAMLError | undefined {
  const docs = parseAllDocuments(input, { uniqueKeys: false, prettyErrors: false });
  if (!Array.isArray(docs)) return (docs as { errors: YAMLError[] }).errors[0];
  for (const d of docs) if (d.errors[0]) return d.errors[0];
  return undefined;
}

function ourFirstError(input: string): YAMLError | undefined {
  try {
    yamlDocuments(input);
    return undefined;
  } catch (err) {
    return err as YAMLError;
  }
}

const brief = (e: YAMLError | undefined) => e && { name: e.name, code: e.code, message: e.message, pos: e.pos };

describe("yaml's private Composer state, read by json-yaml-convert", () => {
  it('a new Composer has onError (a function), errors (an empty array) and doc (null) as own fields', () => {
    const c = new Composer({ uniqueKeys: false }) as unknown as Internals;
    expect([typeof c.onError, c.errors, c.doc]).toStrictEqual(['function', [], null]);
  });

  // yaml catches the exception once and reports it as RESOURCE_EXHAUSTION; the second throw
  // gets out. yamlDocuments reports the first error recorded, so either way it is the real one.
  it('the composer calls the onError set on it after construction, and an exception from it stops next() before the next error', () => {
    const c = new Composer({ uniqueKeys: false });
    const state = c as unknown as Internals;
    const seen: string[] = [];
    const stop = new Error('stop');
    state.onError = (_source, code) => {
      seen.push(code);
      throw stop;
    };
    const run = () => {
      for (const token of new Parser().parse('a: b: c\n&x &y z\n')) for (const _doc of c.next(token));
    };
    expect(run).toThrow(stop);
    expect(seen).toStrictEqual(['BLOCK_AS_IMPLICIT_KEY', 'RESOURCE_EXHAUSTION']);
  });

  it.each([
    'a: 1\nb: [1, 2\nc: 3',
    'a: b: c\n&x &y z',
    '}'.repeat(1000),
    '&a '.repeat(100),
    'a: 1\n---\nb: [',
    "a: 'unterminated",
    'a:\n  - b\n  c: d',
    '---\na: 1\n...\n}\n---\nb',
    'key: value\n\tbad: tab',
  ])('yamlDocuments stops at the same first error as parseAllDocuments (%j)', (input) => {
    const expected = publicFirstError(input);
    expect(expected).toBeDefined();
    expect(brief(ourFirstError(input))).toStrictEqual(brief(expected));
  });

  it('yamlDocuments reads valid streams as parseAllDocuments does', () => {
    const input = '# c\n---\na: [1, {b: 2}]\n---\n- x\n- &r y\n- *r\n...\n';
    const ours = yamlDocuments(input).map((d) => d.toJS());
    const theirs = (parseAllDocuments(input, { uniqueKeys: false, prettyErrors: false }) as ReturnType<typeof yamlDocuments>).map((d) => d.toJS());
    expect(ours).toStrictEqual(theirs);
    expect(ours).toStrictEqual([{ a: [1, { b: 2 }] }, ['x', 'y', 'y']]);
  });
});
