/**
 * Cutting user text for error messages. A message quotes the input to help fix it, but must stay
 * small (an unclosed-tag list of 3M names once made a 30 MB message) and must not split a
 * character: `'12😀'[2]` is half a surrogate pair, which JSON writes as `\ud83d` and some
 * clients refuse outright.
 */

/** About how long an error message may be (UTF-16 code units). */
export const MAX_MESSAGE_CHARS = 1024;

/** At most `max` code units of `s`, never ending inside a surrogate pair; `…` marks a cut. */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  let end = Math.max(0, max - 1);
  const last = s.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return s.slice(0, end) + '…';
}

/** An error message cut to about 1 KB on a code-point boundary. */
export function cutMessage(message: string): string {
  return cutText(message, MAX_MESSAGE_CHARS);
}

/** The code point of `s` that starts at `at` (one or two code units), for quoting "bad character" errors. */
export function codePointAt(s: string, at: number): string {
  const cp = s.codePointAt(at);
  return cp === undefined ? '' : String.fromCodePoint(cp);
}
