/**
 * Reading a few top-level fields of a record straight from its bytes, checking on the way that
 * the whole text is one valid JSON object (issue 18: at start-up, `JSON.parse` of every record
 * only to read its id and index values was most of the load workers' time, and the objects it
 * built most of their garbage).
 *
 * The scan is a fast path with a fallback, never a second JSON parser to trust: it answers
 * `false` ("parse it") for anything it does not read itself — a field of interest whose value
 * is an object or array, nesting deeper than MAX_DEPTH — and then the caller
 * parses the record with JSON.parse as before. When it answers `true`, the text is valid JSON
 * (RFC 8259's grammar, as JSON.parse takes it: whitespace around, no byte-order mark) and each
 * field's value is the one JSON.parse would give (the last occurrence of a key wins, as there).
 * src/state/file/record-scan.test.ts checks that against JSON.parse on generated and mutated texts.
 */

/** Containers nested deeper than this are left to JSON.parse. */
const MAX_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;

/** A field to read: its name's bytes (ASCII names only; see fieldNames). */
export type FieldName = Uint8Array;

/** The names as the scan compares them; undefined if one is not plain ASCII (then do not scan). */
export function fieldNames(names: readonly string[]): FieldName[] | undefined {
  const out: FieldName[] = [];
  for (const n of names) {
    // Printable ASCII without `"` or `\`: such a name appears in a record's bytes as itself.
    if (!/^[\x20\x21\x23-\x5b\x5d-\x7e]*$/.test(n)) return undefined;
    out.push(Buffer.from(n, 'latin1'));
  }
  return out;
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function skipSpace(b: Uint8Array, p: number, end: number): number {
  while (p < end && isSpace(b[p]!)) p++;
  return p;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x66);
}

/** Set by scanString: the string had an escape sequence. */
let escaped = false;

/** Per byte, inside a string: 0 for a byte that stands for itself, else what it is (see scanString). */
const IN_STRING = new Uint8Array(256);
const STRING_END = 1;
const STRING_ESCAPE = 2;
const STRING_BAD = 3;
IN_STRING.fill(STRING_BAD, 0, 0x20);
IN_STRING[QUOTE] = STRING_END;
IN_STRING[BACKSLASH] = STRING_ESCAPE;

/** `b[p]` is `"`: the position after the closing quote, or -1 if the string is not valid JSON. */
function scanString(b: Uint8Array, p: number, end: number): number {
  escaped = false;
  let i = p + 1;
  for (;;) {
    let k = 0;
    while (i < end && (k = IN_STRING[b[i]!]!) === 0) i++;
    if (i >= end || k === STRING_BAD) return -1;
    if (k === STRING_END) return i + 1;
    escaped = true;
    const n = b[++i];
    if (n === 0x75 /* u */) {
      if (i + 4 >= end || !isHex(b[i + 1]!) || !isHex(b[i + 2]!) || !isHex(b[i + 3]!) || !isHex(b[i + 4]!)) return -1;
      i += 5;
    } else if (n === QUOTE || n === BACKSLASH || n === 0x2f || n === 0x62 || n === 0x66 || n === 0x6e || n === 0x72 || n === 0x74) i++;
    else return -1;
  }
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/** A number starts at `p`: the position after it, or -1 (JSON's grammar: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?). */
function scanNumber(b: Uint8Array, p: number, end: number): number {
  let i = p;
  if (b[i] === 0x2d /* - */) i++;
  if (i >= end) return -1;
  if (b[i] === 0x30) i++;
  else if (isDigit(b[i])) while (i < end && isDigit(b[i])) i++;
  else return -1;
  if (i < end && b[i] === 0x2e /* . */) {
    i++;
    if (i >= end || !isDigit(b[i])) return -1;
    while (i < end && isDigit(b[i])) i++;
  }
  if (i < end && (b[i] === 0x65 || b[i] === 0x45)) {
    i++;
    if (i < end && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    if (i >= end || !isDigit(b[i])) return -1;
    while (i < end && isDigit(b[i])) i++;
  }
  return i;
}

function isLiteral(b: Uint8Array, p: number, end: number, word: string): boolean {
  if (p + word.length > end) return false;
  for (let k = 0; k < word.length; k++) if (b[p + k] !== word.charCodeAt(k)) return false;
  return true;
}

/** A scalar (string, number, literal) starts at `p`: the position after it, or -1. */
function scanScalar(b: Uint8Array, p: number, end: number): number {
  const c = b[p]!;
  if (c === QUOTE) return scanString(b, p, end);
  if (c === 0x74) return isLiteral(b, p, end, 'true') ? p + 4 : -1;
  if (c === 0x66) return isLiteral(b, p, end, 'false') ? p + 5 : -1;
  if (c === 0x6e) return isLiteral(b, p, end, 'null') ? p + 4 : -1;
  return scanNumber(b, p, end);
}

const stack = new Uint8Array(MAX_DEPTH);

/**
 * An object or array starts at `p`: the position after its end, or -1 if it is not valid JSON
 * (or nested deeper than MAX_DEPTH). Iterative, so a hostile nesting cannot overflow the stack.
 */
function scanContainer(b: Uint8Array, p: number, end: number): number {
  let depth = 0;
  let i = p;
  for (;;) {
    // At the start of a value.
    const c = b[i];
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === MAX_DEPTH) return -1;
      stack[depth++] = c;
      i = skipSpace(b, i + 1, end);
      if (i >= end) return -1;
      if (b[i] === (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        depth--;
        i++;
      } else {
        if (c === OPEN_OBJECT && (i = member(b, i, end)) < 0) return -1;
        continue;
      }
    } else {
      if (i >= end || (i = scanScalar(b, i, end)) < 0) return -1;
    }
    // After a value: a comma and the next one, or the end of one or more containers.
    for (;;) {
      if (depth === 0) return i;
      i = skipSpace(b, i, end);
      if (i >= end) return -1;
      const open = stack[depth - 1];
      const d = b[i];
      if (d === COMMA) {
        i = skipSpace(b, i + 1, end);
        if (i >= end) return -1;
        if (open === OPEN_OBJECT && (i = member(b, i, end)) < 0) return -1;
        break;
      }
      if (d !== (open === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) return -1;
      depth--;
      i++;
    }
  }
}

/** A member's `"key" :` at `p`: the position of its value, or -1. */
function member(b: Uint8Array, p: number, end: number): number {
  if (b[p] !== QUOTE) return -1;
  let i = scanString(b, p, end);
  if (i < 0) return -1;
  i = skipSpace(b, i, end);
  if (i >= end || b[i] !== COLON) return -1;
  i = skipSpace(b, i + 1, end);
  return i >= end ? -1 : i;
}

/** The field among `names` whose bytes are `b[s..e)`, or -1. */
function whichField(b: Uint8Array, s: number, e: number, names: readonly FieldName[]): number {
  const len = e - s;
  outer: for (let f = 0; f < names.length; f++) {
    const n = names[f]!;
    if (n.length !== len) continue;
    for (let k = 0; k < len; k++) if (b[s + k] !== n[k]) continue outer;
    return f;
  }
  return -1;
}

/** As whichField, for a key written with escapes (`"co\u0064e"` is "code"): rare, so simply decoded. */
function escapedField(b: Buffer, s: number, e: number, names: readonly FieldName[]): number {
  const key = JSON.parse(b.toString('utf8', s, e)) as string;
  return names.findIndex((n) => n.length === key.length && n.every((c, k) => key.charCodeAt(k) === c));
}

/**
 * Buffer's own decoders, which `toString` calls after checking its arguments: the checks and
 * their wrapper were a tenth of the load workers' time (two strings per record), and the scan
 * has checked the bounds.
 */
interface Decoders {
  utf8Slice(start: number, end: number): string;
  latin1Slice(start: number, end: number): string;
}

function scalarValue(b: Buffer, s: number, e: number, hadEscape: boolean): string | number | boolean | null {
  const c = b[s]!;
  const d = b as unknown as Decoders;
  if (c === QUOTE) return hadEscape ? (JSON.parse(d.utf8Slice(s, e)) as string) : d.utf8Slice(s + 1, e - 1);
  if (c === 0x74) return true;
  if (c === 0x66) return false;
  if (c === 0x6e) return null;
  return Number(d.latin1Slice(s, e));
}

/**
 * Reads the record whose JSON text is `b[start..end)`. True: it is a valid JSON object, and
 * `out[f]` holds the value of field `names[f]` as JSON.parse would give it (undefined when
 * absent). False: parse it instead (not valid JSON, not an object, or not read here: see above).
 */
export function scanRecord(b: Buffer, start: number, end: number, names: readonly FieldName[], out: unknown[]): boolean {
  for (let f = 0; f < names.length; f++) out[f] = undefined;
  let i = skipSpace(b, start, end);
  if (i >= end || b[i] !== OPEN_OBJECT) return false;
  i = skipSpace(b, i + 1, end);
  if (i < end && b[i] === CLOSE_OBJECT) return skipSpace(b, i + 1, end) === end;
  for (;;) {
    if (i >= end || b[i] !== QUOTE) return false;
    const k = i;
    i = scanString(b, i, end);
    if (i < 0) return false;
    const field = escaped ? escapedField(b, k, i, names) : whichField(b, k + 1, i - 1, names);
    i = skipSpace(b, i, end);
    if (i >= end || b[i] !== COLON) return false;
    i = skipSpace(b, i + 1, end);
    if (i >= end) return false;
    const v = i;
    const c = b[i];
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (field >= 0) return false;
      i = scanContainer(b, i, end);
    } else {
      i = scanScalar(b, i, end);
      if (i >= 0 && field >= 0) out[field] = scalarValue(b, v, i, escaped);
    }
    if (i < 0) return false;
    i = skipSpace(b, i, end);
    if (i >= end) return false;
    if (b[i] === COMMA) {
      i = skipSpace(b, i + 1, end);
      continue;
    }
    if (b[i] !== CLOSE_OBJECT) return false;
    return skipSpace(b, i + 1, end) === end;
  }
}
