/**
 * What jsonpath-rfc9535 1.3.0 gets wrong, set right before it runs (test/data-compliance.test.ts
 * holds it to the JSONPath Compliance Test Suite):
 * - its parser folds `a && b && c` into `a && (b || c)`: groupAndChains brackets such chains;
 * - it accepts queries RFC 9535 calls invalid (integers beyond ±(2^53−1), functions that are not
 *   well-typed, §2.4.3): checkWellTyped refuses them as the RFC requires.
 */
import { ToolError } from '../../errors.js';

/**
 * `query` with every chain of three or more `&&` operands bracketed to the right
 * (`a && (b && c)`), which the library's parser reads correctly. Strings are skipped; `||`, `,`
 * and brackets end a chain.
 */
export function groupAndChains(query: string): string {
  const inserts: Array<[number, string]> = [];
  // One frame per open bracket: the starts of the current chain's operands.
  const frames: number[][] = [[0]];
  const close = (end: number) => {
    const starts = frames[frames.length - 1]!;
    if (starts.length >= 3) {
      for (const s of starts.slice(1, -1)) inserts.push([s, '(']);
      inserts.push([end, ')'.repeat(starts.length - 2)]);
    }
  };
  for (let i = 0; i < query.length; i++) {
    const c = query[i]!;
    if (c === "'" || c === '"') {
      for (i++; i < query.length && query[i] !== c; i++) if (query[i] === '\\') i++;
    } else if (c === '(' || c === '[') frames.push([i + 1]);
    else if (c === ')' || c === ']') {
      close(i);
      if (frames.length > 1) frames.pop();
    } else if (c === ',' || (c === '|' && query[i + 1] === '|')) {
      close(i);
      frames[frames.length - 1] = [i + 1];
    } else if (c === '&' && query[i + 1] === '&') {
      frames[frames.length - 1]!.push(i + 2);
      i++;
    }
  }
  close(query.length);
  let out = '';
  let at = 0;
  for (const [pos, text] of inserts.sort((a, b) => a[0] - b[0])) {
    out += query.slice(at, pos) + text;
    at = pos;
  }
  return out + query.slice(at);
}

type Node = { type?: string; [k: string]: unknown };
type FnType = 'value' | 'logical' | 'nodes';

/** RFC 9535 §2.4: each standard function's parameter types and result type. */
const FUNCTIONS: Record<string, { params: FnType[]; result: FnType }> = {
  length: { params: ['value'], result: 'value' },
  count: { params: ['nodes'], result: 'value' },
  match: { params: ['value', 'value'], result: 'logical' },
  search: { params: ['value', 'value'], result: 'logical' },
  value: { params: ['nodes'], result: 'value' },
};

function invalid(why: string): ToolError {
  return new ToolError('PARSE_ERROR', `Invalid JSONPath (RFC 9535) query: ${why}`, { language: 'jsonpath' });
}

/** A filter query that selects at most one node (§2.3.5.1: name and index segments only). */
function singular(q: Node): boolean {
  const query = q.value as Node | undefined;
  const segments = (query?.segments ?? []) as Node[];
  return segments.every((s) => {
    if (s.type !== 'ChildSegment') return false;
    const n = s.node as Node;
    if (n.type === 'MemberNameShorthand') return true;
    const sel = n.type === 'BracketedSelection' ? (n.selectors as Node[]) : [];
    return sel.length === 1 && (sel[0]!.type === 'NameSelector' || sel[0]!.type === 'IndexSelector');
  });
}

/** Whether `arg` may stand for a parameter of `type` (§2.4.3). */
function fits(arg: Node, type: FnType): boolean {
  if (arg.type === 'FunctionExpr') return FUNCTIONS[String(arg.name)]?.result === type || (type === 'logical' && FUNCTIONS[String(arg.name)]?.result === 'nodes');
  if (type === 'value') return arg.type === 'Literal' || (arg.type === 'FilterQuery' && singular(arg));
  if (type === 'nodes') return arg.type === 'FilterQuery';
  return arg.type !== 'Literal';
}

/** A function call's arity and argument types; `where`: what its result must be. */
function checkCall(fn: Node, where: 'compared' | 'tested'): void {
  const name = String(fn.name);
  const def = FUNCTIONS[name];
  if (!def) return; // the parser already refuses unknown functions
  const args = (fn.arguments ?? []) as Node[];
  if (args.length !== def.params.length) throw invalid(`${name}() takes ${def.params.length} argument${def.params.length > 1 ? 's' : ''}, not ${args.length}`);
  if (where === 'compared' && def.result !== 'value') throw invalid(`the result of ${name}() cannot be compared`);
  if (where === 'tested' && def.result === 'value') throw invalid(`the result of ${name}() must be compared`);
  args.forEach((a, i) => {
    if (!fits(a, def.params[i]!)) throw invalid(`argument ${i + 1} of ${name}() is not of its type (${def.params[i]})`);
  });
}

/** Refuses what RFC 9535 calls invalid and the library accepts; walks the parsed query. */
export function checkWellTyped(ast: unknown): void {
  const stack: unknown[] = [ast];
  while (stack.length) {
    const n = stack.pop();
    if (typeof n !== 'object' || n === null) continue;
    if (Array.isArray(n)) {
      stack.push(...(n as unknown[]));
      continue;
    }
    const node = n as Node;
    if (node.type === 'IndexSelector' || node.type === 'SliceSelector') {
      for (const k of ['value', 'start', 'end', 'step']) {
        const v = node[k];
        if (typeof v === 'number' && !Number.isSafeInteger(v)) throw invalid('an index or slice bound beyond ±(2^53 − 1)');
      }
    }
    if (node.type === 'ComparisonExpr') {
      for (const side of [node.left, node.right] as Node[]) if (side?.type === 'FunctionExpr') checkCall(side, 'compared');
    }
    if (node.type === 'TestExpr' && (node.expression as Node)?.type === 'FunctionExpr') checkCall(node.expression as Node, 'tested');
    for (const v of Object.values(node)) if (typeof v === 'object' && v !== null) stack.push(v);
  }
}
