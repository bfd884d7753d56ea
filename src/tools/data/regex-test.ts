import vm from 'node:vm';
import { z } from 'zod';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';
import { RegexSandbox } from './bounded-regex.js';

/** Longest pattern (characters). */
export const REGEX_MAX_PATTERN = 2_000;
/** Longest input (characters). */
export const REGEX_MAX_INPUT = 100_000;
/** Longest replacement (characters). */
export const REGEX_MAX_REPLACEMENT = 2_000;
/** Most matches answered (all of them still count for `replaced` and `match_count`). */
export const REGEX_MAX_MATCHES = 1_000;
/** Longest `replaced` text (characters): `$&$&…` on many matches multiplies the input. */
export const REGEX_MAX_REPLACED = 1_000_000;
/** Answers every match as [match, index, groups, named groups]; run in a RegexSandbox. */
const MATCHER = new vm.Script(`(() => {
  const re = new RegExp(pattern, flags);
  const all = re.global;
  const out = [];
  const unicode = re.unicode || re.unicodeSets;
  for (;;) {
    const m = re.exec(input);
    if (m === null) break;
    out.push([m[0], m.index, m.slice(1).map((g) => (g === undefined ? null : g)), m.groups ? Object.entries(m.groups).map(([k, v]) => [k, v === undefined ? null : v]) : null]);
    if (!all) break;
    if (m[0] === '') {
      const cp = unicode ? input.codePointAt(re.lastIndex) : undefined;
      re.lastIndex += cp !== undefined && cp > 0xffff ? 2 : 1;
    }
  }
  return out;
})()`);

type RawMatch = [string, number, Array<string | null>, Array<[string, string | null]> | null];

/** Every match of the pattern, interrupted past the sandbox's budget. */
function matchAll(pattern: string, flags: string, input: string): RawMatch[] {
  return new RegexSandbox().run<RawMatch[]>(MATCHER, { pattern, flags, input });
}

/** Whether `source` compiles with `flags`. */
function compiles(source: string, flags: string): boolean {
  try {
    new RegExp(source, flags);
    return true;
  } catch {
    return false;
  }
}

/** Endings that complete an unfinished construct (an escape, a group head, a quantifier, a class). */
const COMPLETIONS = ['', 'a', ']', '}', '1}', 'a>a', '>a', ':a', '=a', '{1}', 'u{1}', 'x11', 'c1', 'p{L}'];

/** Whether some valid pattern starts with `prefix` (as far as these endings and closing brackets can tell). */
function viable(prefix: string, flags: string): boolean {
  let open = 0;
  for (const c of prefix) if (c === '(') open++;
  for (const end of COMPLETIONS) {
    for (let k = 0; k <= open; k++) if (compiles(prefix + end + ')'.repeat(k), flags)) return true;
    if (compiles(`${prefix}${end}]${')'.repeat(open)}`, flags)) return true;
  }
  return false;
}

/**
 * Where an invalid pattern goes wrong (0-based): the end of its longest prefix that could still
 * start a valid pattern, found by bisection (V8's messages name no position). The pattern's
 * length when every prefix is viable (an unclosed group or class).
 */
export function errorPosition(pattern: string, flags: string): number {
  let lo = 0; // viable
  let hi = pattern.length; // not viable (the whole pattern)
  if (viable(pattern, flags)) return pattern.length;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (viable(pattern.slice(0, mid), flags)) lo = mid;
    else hi = mid;
  }
  return hi - 1;
}

/** GetSubstitution (ECMA-262 §22.1.3.19.1): `$$`, `$&`, `` $` ``, `$'`, `$n`, `$nn`, `$<name>`. */
function substitute(replacement: string, m: RawMatch, input: string, hasNamed: boolean): string {
  const [matched, position, groups, named] = m;
  return replacement.replace(/\$([$&`']|\d{1,2}|<[^>]*>)/g, (whole, what: string) => {
    if (what === '$') return '$';
    if (what === '&') return matched;
    if (what === '`') return input.slice(0, position);
    if (what === "'") return input.slice(position + matched.length);
    if (what.startsWith('<')) {
      if (!hasNamed) return whole;
      const v = named?.find(([k]) => k === what.slice(1, -1));
      return v?.[1] ?? '';
    }
    // $nn if that group exists, else $n followed by a digit, else literal.
    const two = Number(what);
    if (what.length === 2 && two >= 1 && two <= groups.length) return groups[two - 1] ?? '';
    const one = Number(what[0]);
    if (one >= 1 && one <= groups.length) return (groups[one - 1] ?? '') + what.slice(1);
    return whole;
  });
}

/** The input with every match (or the first, without the g flag) replaced, bounded in size. */
function replaceAll(input: string, matches: RawMatch[], replacement: string): string {
  const parts: string[] = [];
  let size = 0;
  let last = 0;
  for (const m of matches) {
    const piece = input.slice(last, m[1]) + substitute(replacement, m, input, m[3] !== null);
    size += piece.length;
    if (size > REGEX_MAX_REPLACED) throw new ToolError('PARSE_ERROR', `The replaced text would be longer than ${REGEX_MAX_REPLACED} characters`, { limit: REGEX_MAX_REPLACED });
    parts.push(piece);
    last = m[1] + m[0].length;
  }
  parts.push(input.slice(last));
  return parts.join('');
}

const Match = z.object({
  match: z.string().describe('The matched text'),
  index: z.number().int().describe('Where it starts in input (0-based, UTF-16 units as in JavaScript)'),
  end: z.number().int().describe('Where it ends (exclusive)'),
  groups: z.array(z.string().nullable()).describe('Numbered capture groups 1…n (null: did not participate)'),
  named: z.record(z.string(), z.string().nullable()).describe('Named capture groups'),
});

export const regexTest = defineTool({
  name: 'regex_test',
  title: 'Regular expression tester (JavaScript)',
  description:
    'Test a JavaScript regular expression against a text: its matches with index and capture groups (numbered and named; every match with the g flag, else the first), the text with a replacement applied when one is given, or why the pattern is invalid and where. Catastrophic backtracking is cut off after 1 s of matching with a 422.',
  input: z.object({
    pattern: z.string().max(REGEX_MAX_PATTERN).describe('The pattern, without slashes: "(\\\\d+)-(?<unit>[a-z]+)"'),
    flags: z.string().max(8).regex(/^[dgimsuvy]*$/, 'JavaScript flags: d g i m s u v y').default('g').describe('JavaScript flags (default "g": every match)'),
    input: z.string().max(REGEX_MAX_INPUT).describe('The text to match'),
    replacement: z.string().max(REGEX_MAX_REPLACEMENT).optional().describe('Replacement as String.prototype.replace reads it: $1, $<name>, $&, $$'),
  }),
  output: z.object({
    valid: z.boolean().describe('Whether the pattern and flags are a valid JavaScript regular expression'),
    error: z
      .object({ message: z.string(), position: z.number().int().nullable().describe('0-based position in the pattern where it goes wrong (null: the flags)') })
      .optional()
      .describe('Why the pattern is invalid'),
    matched: z.boolean().optional().describe('Whether there was any match'),
    match_count: z.number().int().optional().describe('How many matches'),
    matches: z.array(Match).optional().describe(`The matches, at most ${REGEX_MAX_MATCHES}`),
    truncated: z.boolean().optional().describe('Whether matches was cut at its limit'),
    replaced: z.string().optional().describe('The input with the replacement applied (when replacement is given)'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/regex-test' },
  example: { pattern: '(\\d+)-(?<unit>[a-z]+)', flags: 'g', input: '10-kg, 20-lb', replacement: '$<unit>=$1' },
  handler: ({ pattern, flags, input, replacement }) => {
    try {
      new RegExp(pattern, flags);
    } catch (err) {
      const message = err instanceof Error ? err.message : 'Invalid regular expression';
      const badFlags = !compiles('', flags);
      return { valid: false, error: { message, position: badFlags ? null : errorPosition(pattern, flags) } };
    }
    const found = matchAll(pattern, flags, input);
    const matches = found.slice(0, REGEX_MAX_MATCHES).map(([match, index, groups, named]) => ({
      match,
      index,
      end: index + match.length,
      groups: Array.from(groups),
      named: Object.fromEntries(Array.from(named ?? [], ([k, v]) => [k, v] as const)),
    }));
    const out = { valid: true, matched: found.length > 0, match_count: found.length, matches, truncated: found.length > REGEX_MAX_MATCHES };
    return replacement === undefined ? out : { ...out, replaced: replaceAll(input, found, replacement) };
  },
});
