import { z } from 'zod';
import type * as Rfc6902 from 'rfc6902';
import { ToolError } from '../../errors.js';
import { lazyRequire } from '../../lib/lazy-require.js';
import { defineTool } from '../../registry.js';
import { checkJsonSize, jsonText, parseJsonField } from './json-text.js';

/** Largest `a`, `b`, `document` or `patch` accepted (characters each), on the large body limit. */
export const JSON_PATCH_MAX_INPUT = 4_000_000;
/** Most operations in one patch. */
export const JSON_PATCH_MAX_OPERATIONS = 10_000;
/** Largest result or patch, as JSON text (characters): `copy` doubles a document per operation. */
export const JSON_PATCH_MAX_OUTPUT = 8_000_000;

const rfc6902 = lazyRequire<typeof Rfc6902>('rfc6902');

const OPS = ['add', 'remove', 'replace', 'move', 'copy', 'test'] as const;
/**
 * Pointer tokens refused: rfc6902 skips them while walking a path (its guard against prototype
 * pollution), so a path through them would silently mean another place.
 */
const UNSAFE_TOKENS = new Set(['__proto__', 'constructor', 'prototype']);

const Operation = z.object({
  op: z.enum(OPS),
  path: z.string(),
  from: z.string().optional(),
  value: z.unknown().optional(),
});

/** A 422 naming the operation (its index in the patch) and what is wrong with it. */
function opError(index: number, op: unknown, reason: string, details: Record<string, unknown> = {}): ToolError {
  const o = typeof op === 'object' && op !== null ? (op as Record<string, unknown>) : {};
  const where = typeof o.path === 'string' ? ` (${String(o.op)} ${JSON.stringify(o.path).slice(0, 200)})` : '';
  return new ToolError('PARSE_ERROR', `Operation ${index}${where} failed: ${reason}`, { operation: index, ...details });
}

/** A JSON Pointer (RFC 6901) checked, then moved under the wrapper's `/d` so the root can be replaced. */
function wrapPointer(pointer: string, index: number, op: unknown, field: string): string {
  if (pointer !== '' && !pointer.startsWith('/')) throw opError(index, op, `"${field}" is not a JSON Pointer (it must be empty or start with "/")`);
  if (/~(?![01])/.test(pointer)) throw opError(index, op, `"${field}" has a "~" not followed by 0 or 1`);
  for (const raw of pointer.split('/').slice(1)) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (UNSAFE_TOKENS.has(token)) throw opError(index, op, `"${field}" goes through "${token}", which this tool does not support`);
  }
  return `/d${pointer}`;
}

/** One operation of the patch, validated (RFC 6902 §4's required members) and wrapped. */
function checkedOperation(raw: unknown, index: number): Rfc6902.Operation {
  const parsed = Operation.safeParse(raw);
  if (!parsed.success) {
    const o = typeof raw === 'object' && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : undefined;
    if (!o) throw opError(index, raw, 'an operation must be an object');
    if (!OPS.includes(o.op as (typeof OPS)[number])) throw opError(index, raw, `"op" must be one of ${OPS.join(', ')}`);
    if (typeof o.path !== 'string') throw opError(index, raw, '"path" must be a string');
    throw opError(index, raw, '"from" must be a string');
  }
  const op = parsed.data;
  const needsValue = op.op === 'add' || op.op === 'replace' || op.op === 'test';
  if (needsValue && !Object.hasOwn(raw as object, 'value')) throw opError(index, raw, `"${op.op}" needs a "value"`);
  const out: Record<string, unknown> = { op: op.op, path: wrapPointer(op.path, index, raw, 'path') };
  if (op.op === 'move' || op.op === 'copy') {
    if (op.from === undefined) throw opError(index, raw, `"${op.op}" needs a "from"`);
    out.from = wrapPointer(op.from, index, raw, 'from');
    if (op.op === 'move' && (op.path === op.from || op.path.startsWith(`${op.from}/`))) {
      if (op.path !== op.from) throw opError(index, raw, '"from" is a proper prefix of "path": a value cannot be moved into one of its children');
    }
  }
  if (needsValue) out.value = op.value;
  return out as unknown as Rfc6902.Operation;
}

/** Why rfc6902 refused an operation, in words a caller can act on. */
function failure(err: Error): { reason: string; kind: string } {
  if (err.name === 'TestError') return { reason: 'the "test" value does not equal the value at "path"', kind: 'test_failed' };
  if (err.name === 'MissingError') return { reason: 'the target location does not exist (or an array index is out of range)', kind: 'missing' };
  return { reason: 'the operation is not valid here', kind: 'invalid' };
}

/** RFC 6902 application: all operations or none; the first failure is a 422 naming its index. */
export function applyJsonPatch(document: unknown, patch: unknown): unknown {
  if (!Array.isArray(patch)) throw new ToolError('PARSE_ERROR', 'patch must be a JSON array of operations');
  if (patch.length > JSON_PATCH_MAX_OPERATIONS) throw new ToolError('PARSE_ERROR', `patch has ${patch.length} operations; the limit is ${JSON_PATCH_MAX_OPERATIONS}`);
  // Wrapped so that a path of "" (the whole document) is an ordinary member to add or replace.
  const holder: { d?: unknown } = { d: document };
  patch.forEach((raw, i) => {
    const op = checkedOperation(raw, i);
    let err: Error | null;
    try {
      err = rfc6902().applyPatch(holder, [op])[0] ?? null;
    } catch (e) {
      // Pointer.fromJSON throws on a malformed pointer; already checked above, kept for safety.
      throw opError(i, raw, e instanceof Error ? e.message : 'invalid operation');
    }
    if (err) {
      const { reason, kind } = failure(err);
      throw opError(i, raw, reason, { reason: kind });
    }
    if (!Object.hasOwn(holder, 'd')) throw opError(i, raw, 'the whole document cannot be removed');
    // A `copy` can double the document: bounded per operation, not only at the end.
    if (op.op === 'copy' || op.op === 'add') checkJsonSize(holder.d, 0, JSON_PATCH_MAX_OUTPUT, 'patched document');
  });
  return holder.d;
}

const Action = z.enum(['diff', 'apply']);
const input = z.object({
  action: Action.describe('diff: the patch that turns a into b; apply: document with patch applied'),
  a: z.string().max(JSON_PATCH_MAX_INPUT).optional().describe('diff: the original JSON text'),
  b: z.string().max(JSON_PATCH_MAX_INPUT).optional().describe('diff: the changed JSON text'),
  document: z.string().max(JSON_PATCH_MAX_INPUT).optional().describe('apply: the JSON text to patch'),
  patch: z.string().max(JSON_PATCH_MAX_INPUT).optional().describe('apply: the RFC 6902 patch, a JSON array of operations as text'),
  indent: z.number().int().min(0).max(8).default(2).describe('apply: indentation of the result text, 0-8 (0 = one line)'),
});

export const jsonPatch = defineTool({
  name: 'json_patch',
  title: 'JSON Patch (RFC 6902) diff and apply',
  description:
    'Compare two JSON documents as an RFC 6902 JSON Patch (action "diff": a → b), or apply a JSON Patch to a document (action "apply": all operations or none). A failing "test" operation or a path that does not exist answers a 422 naming the operation index.',
  input,
  inputRules: [
    { when: { field: 'action', in: ['diff'] }, require: ['a', 'b'] },
    { when: { field: 'action', in: ['apply'] }, require: ['document', 'patch'] },
  ],
  output: z.object({
    action: Action.describe('The action applied'),
    patch: z.array(z.record(z.string(), z.unknown())).optional().describe('diff: the RFC 6902 operations turning a into b (empty when equal)'),
    equal: z.boolean().optional().describe('diff: whether a and b are the same JSON value'),
    result: z.string().optional().describe('apply: the patched document, as JSON text'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/json-patch', bodyLimit: 'large' },
  example: { action: 'apply', document: '{"name":"a","tags":["x"]}', patch: '[{"op":"test","path":"/name","value":"a"},{"op":"add","path":"/tags/-","value":"y"}]' },
  handler: ({ action, a, b, document, patch, indent }) => {
    if (action === 'diff') {
      const before = parseJsonField(a ?? '', 'a');
      const after = parseJsonField(b ?? '', 'b');
      const ops = rfc6902().createPatch(before, after) as unknown as Array<Record<string, unknown>>;
      checkJsonSize(ops, 0, JSON_PATCH_MAX_OUTPUT, 'patch');
      return { action, patch: ops, equal: ops.length === 0 };
    }
    const doc = parseJsonField(document ?? '', 'document');
    const ops = parseJsonField(patch ?? '', 'patch');
    return { action, result: jsonText(applyJsonPatch(doc, ops), indent, JSON_PATCH_MAX_OUTPUT, 'patched document') };
  },
});
