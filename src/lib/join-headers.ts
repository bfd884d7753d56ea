/**
 * `base` and then `extra`, as one new header object. Not `{ ...base, ...extra }`: on Node 20's V8
 * an object literal with anything after a spread leaves the fast path, and two spreads cost
 * ≈ 5 µs against ≈ 0.2 µs for this loop (node, 1e6 iterations: the REST answer of a limited call
 * paid it on every request — issue 37).
 */
export function joinHeaders(base: Readonly<Record<string, string>>, extra: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in base) out[k] = base[k]!;
  for (const k in extra) out[k] = extra[k]!;
  return out;
}
