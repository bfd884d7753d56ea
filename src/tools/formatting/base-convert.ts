import { z } from 'zod';
import { cutText, ToolError } from '../../errors.js';
import { charAt } from '../../lib/code-points.js';
import { defineTool } from '../../registry.js';

const BASES = ['dec', 'bin', 'oct', 'hex'] as const;
const Base = z.enum(BASES);
type Base = z.infer<typeof Base>;

const RADIX: Record<Base, number> = { dec: 10, bin: 2, oct: 8, hex: 16 };
const PREFIX: Record<Base, string | null> = { dec: null, bin: '0b', oct: '0o', hex: '0x' };
/** The digits of each base, as a regular-expression class: the parser's and the published pattern's. */
const DIGIT_CLASS: Record<Base, string> = { dec: '[0-9]', bin: '[01]', oct: '[0-7]', hex: '[0-9a-fA-F]' };
const perBase = <T>(f: (b: Base) => T) => Object.fromEntries(BASES.map((b) => [b, f(b)])) as Record<Base, T>;
const DIGITS = perBase((b) => new RegExp(`^${DIGIT_CLASS[b]}$`));
/** Digits and separators only: the common case, checked at once (the loop below then finds nothing). */
const ALL_DIGITS = perBase((b) => new RegExp(`^(?:${DIGIT_CLASS[b]}|_)*$`));

/**
 * Largest number of digits accepted. BigInt parsing and printing are super-linear; at this
 * size a conversion to every base takes well under a second here (bench/hostile corpus).
 */
export const BASE_MAX_DIGITS = 100_000;
/**
 * Longest `value`: the digits, a separator between each two, a sign, a prefix and a little
 * surrounding space. The digit limit is what binds; the published pattern states it exactly.
 */
export const BASE_MAX_CHARS = BASE_MAX_DIGITS * 2 + 10;

/**
 * Every value that converts from `base`, as a JSON Schema pattern: surrounding space (trimmed),
 * an optional sign, the base's optional prefix, 1 to BASE_MAX_DIGITS digits with single `_`
 * between digits. A test checks it against the parser.
 */
export function valuePattern(base: Base): string {
  const d = DIGIT_CLASS[base];
  const p = PREFIX[base];
  const prefix = p ? `(?:0[${p[1]}${p[1]!.toUpperCase()}])?` : '';
  return `^\\s*[+-]?${prefix}(?:${d}_?){0,${BASE_MAX_DIGITS - 1}}${d}\\s*$`;
}

/** `value`'s pattern for each `from` (dec when absent), as if/then: JSON Schema for "the digits depend on the base". */
const VALUE_BY_BASE = BASES.map((b) => ({
  if: b === 'dec' ? { properties: { from: { const: b } } } : { properties: { from: { const: b } }, required: ['from'] },
  then: { properties: { value: { pattern: valuePattern(b) } } },
}));

function parse(value: string, from: Base): bigint {
  let s = value.trim();
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  const prefix = PREFIX[from];
  const lower = s.slice(0, 2).toLowerCase();
  if (prefix && lower === prefix) s = s.slice(2);
  else if (/^0[xbo]$/.test(lower) && from !== 'hex') {
    throw new ToolError('PARSE_ERROR', `Prefix "${s.slice(0, 2)}" does not match base ${from}`, { position: value.indexOf(s.slice(0, 2)) + 1 });
  }
  if (s === '') throw new ToolError('PARSE_ERROR', `No digits in "${cutText(value, 50)}"`);
  // Separators: single underscores between digits.
  if (s.startsWith('_') || s.endsWith('_') || s.includes('__')) {
    throw new ToolError('PARSE_ERROR', 'Underscore separators must stand between digits');
  }
  const digits = s.includes('_') ? s.replaceAll('_', '') : s;
  if (digits.length > BASE_MAX_DIGITS) {
    throw new ToolError('INVALID_INPUT', `Too many digits: ${digits.length} (limit ${BASE_MAX_DIGITS})`);
  }
  // Any other character: find the first, whole (not one UTF-16 unit: "12😀" must not quote half of 😀).
  if (!ALL_DIGITS[from].test(s)) {
    for (let i = 0; i < s.length; i++) {
      const ch = charAt(s, i);
      if (ch !== '_' && !DIGITS[from].test(ch)) {
        throw new ToolError('PARSE_ERROR', `Invalid ${from} digit "${ch}" at position ${value.indexOf(s) + i + 1}`, {
          position: value.indexOf(s) + i + 1,
        });
      }
    }
  }
  const n = from === 'dec' ? BigInt(digits) : BigInt(`${prefix}${digits}`);
  return negative ? -n : n;
}

function format(n: bigint, radix: number): string {
  return n < 0n ? `-${(-n).toString(radix)}` : n.toString(radix);
}

export const baseConvert = defineTool({
  name: 'base_convert',
  title: 'Number base converter',
  description:
    'Convert an integer of any size between decimal, binary, octal and hexadecimal. Accepts an optional sign, a 0x/0b/0o prefix matching the source base, and _ separators between digits.',
  input: z
    .object({
      value: z
        .string()
        .min(1)
        .max(BASE_MAX_CHARS)
        .describe(`The integer to convert, e.g. "255", "-0xff", "1010_1010": at most ${BASE_MAX_DIGITS} digits of the base of from (a sign, the prefix, _ between digits and surrounding space not counted)`),
      from: Base.default('dec').describe('The base of value: dec, bin, oct or hex'),
    })
    .meta({ allOf: VALUE_BY_BASE }),
  output: z.object({
    input: z.string().describe('The value as given'),
    from: Base.describe('The source base'),
    dec: z.string().describe('Decimal'),
    bin: z.string().describe('Binary, no prefix'),
    oct: z.string().describe('Octal, no prefix'),
    hex: z.string().describe('Hexadecimal, lower case, no prefix'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/base-convert' },
  example: { value: '255', from: 'dec' },
  handler: ({ value, from }) => {
    const n = parse(value, from);
    return {
      input: value,
      from,
      dec: format(n, RADIX.dec),
      bin: format(n, RADIX.bin),
      oct: format(n, RADIX.oct),
      hex: format(n, RADIX.hex),
    };
  },
});
