import { z } from 'zod';
import type * as JsDiff from 'diff';
import { ToolError } from '../../errors.js';
import { lazyRequire } from '../../lib/lazy-require.js';
import { defineTool } from '../../registry.js';

/** Largest `a` or `b` accepted (characters each): two 1 MB texts, on the large body limit. */
export const TEXT_DIFF_MAX_INPUT = 1_000_000;
/**
 * Most edits a diff may need (jsdiff's `maxEditLength`, in tokens): Myers' algorithm costs about
 * the square of the edit distance, so two unrelated 1 MB texts are refused, not computed for minutes.
 */
export const TEXT_DIFF_MAX_EDITS = 5_000;
/**
 * Time the diffs of one call may take (jsdiff's `timeout`): jsdiff spends about a microsecond per
 * diagonal of Myers' algorithm, so even 5,000 edits over 50k lines took seconds (20,000 took
 * 240 s). Past it the call is a 422; the pool's deadline stays the outer bound.
 */
export const TEXT_DIFF_TIMEOUT_MS = 2_000;
/** Most change entries answered in `changes` (the unified diff and the stats stay whole). */
export const TEXT_DIFF_MAX_CHANGES = 5_000;

const jsdiff = lazyRequire<typeof JsDiff>('diff');

const Mode = z.enum(['lines', 'words', 'chars']);
type Mode = z.infer<typeof Mode>;

const Stats = z.object({
  added: z.number().int().describe('Tokens (lines, words or characters: the mode\'s unit) only in b'),
  removed: z.number().int().describe('Tokens only in a'),
  unchanged: z.number().int().describe('Tokens in both'),
});

const Hunk = z.object({
  old_start: z.number().int().describe('First line of the hunk in a (1-based; for an empty side, the line before it, as diff -u prints it)'),
  old_lines: z.number().int(),
  new_start: z.number().int().describe('First line of the hunk in b (1-based)'),
  new_lines: z.number().int(),
  lines: z.array(z.string()).describe('The hunk\'s lines, each prefixed by " ", "-" or "+"'),
});

const Change = z.object({
  type: z.enum(['added', 'removed', 'unchanged']),
  value: z.string(),
});

function tooDifferent(): ToolError {
  return new ToolError('PARSE_ERROR', `The texts differ too much to diff within the limits (${TEXT_DIFF_MAX_EDITS} edits, ${TEXT_DIFF_TIMEOUT_MS / 1000} s); diff smaller parts (or by lines rather than characters)`, {
    maxEdits: TEXT_DIFF_MAX_EDITS,
    limitMs: TEXT_DIFF_TIMEOUT_MS,
  });
}

/** The mode's token-level changes, or a 422 when they would need more than TEXT_DIFF_MAX_EDITS edits. */
function changesOf(mode: Mode, a: string, b: string, ignoreCase: boolean, ignoreWhitespace: boolean, timeout: number): JsDiff.Change[] {
  const d = jsdiff();
  const bound = { maxEditLength: TEXT_DIFF_MAX_EDITS, timeout };
  const out =
    mode === 'lines'
      ? d.diffLines(ignoreCase ? a.toLowerCase() : a, ignoreCase ? b.toLowerCase() : b, { ...bound, ignoreWhitespace })
      : mode === 'words'
        ? ignoreWhitespace
          ? d.diffWords(a, b, { ...bound, ignoreCase })
          : d.diffWordsWithSpace(a, b, { ...bound, ignoreCase })
        : d.diffChars(a, b, { ...bound, ignoreCase });
  if (!out) throw tooDifferent();
  return out;
}

/** A hunk range as GNU diff and git print it: the length left out when it is 1. */
const range = (start: number, lines: number) => (lines === 1 ? `${start}` : `${start},${lines}`);

/** The unified diff text, as `diff -u` prints it (without the dates of its --- and +++ lines). */
function unifiedText(aName: string, bName: string, hunks: ReadonlyArray<z.infer<typeof Hunk>>): string {
  const out = [`--- ${aName}`, `+++ ${bName}`];
  for (const h of hunks) out.push(`@@ -${range(h.old_start, h.old_lines)} +${range(h.new_start, h.new_lines)} @@`, ...h.lines);
  return `${out.join('\n')}\n`;
}

export const textDiff = defineTool({
  name: 'text_diff',
  title: 'Text diff (unified)',
  description:
    'Compare two texts: a unified diff (as `diff -u` prints it, by lines) with its hunks, and counts of added, removed and unchanged lines, words or characters (mode). Use it to see exactly what changed between two versions of a file or answer.',
  input: z.object({
    a: z.string().max(TEXT_DIFF_MAX_INPUT).describe('The original text'),
    b: z.string().max(TEXT_DIFF_MAX_INPUT).describe('The changed text'),
    mode: Mode.default('lines').describe('Unit of stats and changes: lines (default), words or chars. The unified diff is always by lines'),
    context: z.number().int().min(0).max(20).default(3).describe('Unchanged lines around each hunk, 0-20 (default 3)'),
    ignore_whitespace: z.boolean().default(false).describe('Ignore whitespace differences (lines: leading/trailing; words: between words)'),
    ignore_case: z.boolean().default(false).describe('Compare case-insensitively'),
    a_name: z.string().max(200).regex(/^[^\r\n]*$/, 'one line').default('a').describe('Name of a in the unified diff header (--- line)'),
    b_name: z.string().max(200).regex(/^[^\r\n]*$/, 'one line').default('b').describe('Name of b in the unified diff header (+++ line)'),
  }),
  output: z.object({
    equal: z.boolean().describe('Whether the texts are the same (under the ignore options)'),
    unified: z.string().describe('The unified diff by lines (empty when equal)'),
    hunks: z.array(Hunk).describe('The unified diff\'s hunks'),
    stats: Stats.describe('Counts in the mode\'s unit'),
    changes: z.array(Change).describe(`The mode's changes in order (consecutive tokens of one kind joined), at most ${TEXT_DIFF_MAX_CHANGES}`),
    changes_truncated: z.boolean().describe('Whether changes was cut at its limit'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  cost: 'cpu',
  rest: { method: 'POST', path: '/api/text-diff', bodyLimit: 'large' },
  example: { a: 'one\ntwo\nthree\n', b: 'one\n2\nthree\n', mode: 'lines', context: 3 },
  handler: ({ a, b, mode, context, ignore_whitespace, ignore_case, a_name, b_name }) => {
    const start = performance.now();
    const changes = changesOf(mode, a, b, ignore_case, ignore_whitespace, TEXT_DIFF_TIMEOUT_MS);
    const left = Math.max(1, TEXT_DIFF_TIMEOUT_MS - (performance.now() - start));
    const stats = { added: 0, removed: 0, unchanged: 0 };
    for (const c of changes) stats[c.added ? 'added' : c.removed ? 'removed' : 'unchanged'] += c.count;
    const equal = stats.added === 0 && stats.removed === 0;
    // The unified diff is always by lines (that is what the format is); case folding has no
    // place in it, so with ignore_case equal texts give an empty one, others the exact lines.
    const patch = equal
      ? undefined
      : jsdiff().structuredPatch(a_name, b_name, a, b, undefined, undefined, { context, ignoreWhitespace: ignore_whitespace, maxEditLength: TEXT_DIFF_MAX_EDITS, timeout: left });
    if (!equal && !patch) throw tooDifferent();
    // An empty side starts at the line before it, as diff -u numbers it (jsdiff's structured
    // hunks say the line after; its own formatPatch shifts them the same way).
    const hunks = (patch?.hunks ?? []).map((h) => ({
      old_start: h.oldLines === 0 ? h.oldStart - 1 : h.oldStart,
      old_lines: h.oldLines,
      new_start: h.newLines === 0 ? h.newStart - 1 : h.newStart,
      new_lines: h.newLines,
      lines: h.lines,
    }));
    const unified = hunks.length ? unifiedText(a_name, b_name, hunks) : '';
    return {
      equal,
      unified,
      hunks,
      stats,
      changes: changes.slice(0, TEXT_DIFF_MAX_CHANGES).map((c) => ({ type: c.added ? ('added' as const) : c.removed ? ('removed' as const) : ('unchanged' as const), value: c.value })),
      changes_truncated: changes.length > TEXT_DIFF_MAX_CHANGES,
    };
  },
});
