import { z } from 'zod';
import { cutText, ToolError } from '../../errors.js';
import { charAt } from '../../lib/code-points.js';
import { defineTool } from '../../registry.js';

const Base = z.enum(['dec', 'bin', 'oct', 'hex']);
type Base = z.infer<typeof Base>;

const RADIX: Record<Base, number> = { dec: 10, bin: 2, oct: 8, hex: 16 };
const PREFIX: Record<Base, string | null> = { dec: null, bin: '0b', oct: '0o', hex: '0x' };
const DIGITS: Record<Base, RegExp> = { dec: /^[0-9]$/, bin: /^[01]$/, oct: /^[0-7]$/, hex: /^[0-9a-fA-F]$/ };
/** Digits and separators only: the common case, checked at once (the loop below then finds nothing). */
const ALL_DIGITS: Record<Base, RegExp> = { dec: /^[0-9_]*$/, bin: /^[01_]*$/, oct: /^[0-7_]*$/, hex: /^[0-9a-fA-F_]*$/ };

/**
 * Largest number of digits accepted. BigInt parsing and printing are super-linear; at this
 * size a conversion to every base takes well under a second here (bench/hostile corpus).
 */
export const BASE_MAX_DIGITS = 100_000;

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
  input: z.object({
    value: z.string().min(1).max(BASE_MAX_DIGITS * 2 + 10).describe('The integer to convert, e.g. "255", "-0xff", "1010_1010"'),
    from: Base.default('dec').describe('The base of value: dec, bin, oct or hex'),
  }),
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
