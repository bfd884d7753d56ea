/**
 * Whole characters in messages. A message that quotes one UTF-16 unit of the input cuts a
 * character outside the BMP in half (`base_convert` `"12😀"` said `Invalid dec digit "\ud83d"`),
 * which JSON then writes as an escape and some clients refuse.
 */

/** The whole character (code point) that starts at `at`. */
export function charAt(s: string, at: number): string {
  const cp = s.codePointAt(at);
  return cp === undefined ? '' : String.fromCodePoint(cp);
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** `s` with every half of a surrogate pair that stands alone replaced by U+FFFD. */
export function wholeCodePoints(s: string): string {
  return s.replace(LONE_SURROGATE, '\ufffd');
}
