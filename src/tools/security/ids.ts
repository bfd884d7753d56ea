/**
 * Id layouts: UUID (RFC 9562) and ULID (github.com/ulid/spec). Pure functions of a time and
 * random bytes, so the tools draw both (service clock, CSPRNG) and the tests can check layouts.
 */

/** Crockford's base 32, as ULID uses it. */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** Gregorian reform (1582-10-15) to the Unix epoch, in 100 ns ticks: the v1/v6 time base. */
const GREGORIAN_OFFSET = 122_192_928_000_000_000n;

const hex = (n: bigint, digits: number) => n.toString(16).padStart(digits, '0');

/** The 128 bits of a UUID as its canonical lower-case text. */
export function uuidText(bits: bigint): string {
  const h = hex(bits, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * UUIDv7 (RFC 9562 §5.7): 48-bit Unix ms, version 7, 74 random bits around the variant.
 * `random` is the 74-bit tail (rand_a ‖ rand_b); a batch raises it by one within a millisecond
 * (§6.2 method 1, a counter seeded at random) so the ids sort in order of generation.
 */
export function uuid7(ms: number, random: bigint): string {
  const randA = (random >> 62n) & 0xfffn;
  const randB = random & ((1n << 62n) - 1n);
  return uuidText((BigInt(ms) << 80n) | (0x7n << 76n) | (randA << 64n) | (0b10n << 62n) | randB);
}

/** ULID: 48-bit ms then 80 random bits, 26 Crockford characters. */
export function ulid(ms: number, random: bigint): string {
  let n = (BigInt(ms) << 80n) | random;
  let out = '';
  for (let i = 0; i < 26; i++) {
    out = CROCKFORD[Number(n & 31n)]! + out;
    n >>= 5n;
  }
  return out;
}

/** A big-endian unsigned integer of the bytes. */
export function bytesToBigInt(bytes: Uint8Array): bigint {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  return n;
}

/** What id_inspect reports. */
export interface IdFacts {
  valid: boolean;
  kind: 'uuid' | 'ulid' | 'nanoid' | 'unknown';
  canonical: string | null;
  version: number | null;
  variant: 'ncs' | 'rfc9562' | 'microsoft' | 'future' | null;
  timestamp: string | null;
  unix_ms: number | null;
  note?: string;
}

const UUID = /^(?:urn:uuid:)?\{?([0-9a-f]{8})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{4})-?([0-9a-f]{12})\}?$/i;
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/i;
const NANOID = /^[A-Za-z0-9_-]{21}$/;

function variantOf(octet: number): IdFacts['variant'] {
  if ((octet & 0x80) === 0) return 'ncs';
  if ((octet & 0xc0) === 0x80) return 'rfc9562';
  if ((octet & 0xe0) === 0xc0) return 'microsoft';
  return 'future';
}

/** The 100 ns Gregorian ticks of a v1/v6 UUID as Unix ms (sub-ms precision dropped) and ISO. */
function gregorian(ticks: bigint): { unix_ms: number; timestamp: string } | null {
  const ms = Number((ticks - GREGORIAN_OFFSET) / 10_000n);
  // Before 1970 or past what a Date holds: no ISO form, but still a layout fact.
  return Number.isSafeInteger(ms) && Math.abs(ms) <= 8.64e15 ? { unix_ms: ms, timestamp: new Date(ms).toISOString() } : null;
}

function uuidFacts(h: string): IdFacts {
  const bits = BigInt(`0x${h}`);
  const base: IdFacts = { valid: true, kind: 'uuid', canonical: uuidText(bits), version: null, variant: null, timestamp: null, unix_ms: null };
  if (bits === 0n) return { ...base, note: 'Nil UUID' };
  if (bits === (1n << 128n) - 1n) return { ...base, note: 'Max UUID' };
  const version = Number((bits >> 76n) & 0xfn);
  const variant = variantOf(parseInt(h.slice(16, 18), 16));
  const facts: IdFacts = { ...base, version, variant };
  if (variant !== 'rfc9562') return { ...facts, version: null, note: 'Not an RFC 9562 variant: the version field has no meaning' };
  let time: { unix_ms: number; timestamp: string } | null = null;
  if (version === 1) {
    const low = (bits >> 96n) & 0xffffffffn;
    const mid = (bits >> 80n) & 0xffffn;
    const high = (bits >> 64n) & 0xfffn;
    time = gregorian((high << 48n) | (mid << 32n) | low);
  } else if (version === 6) {
    const high = (bits >> 80n) & 0xffffffffffffn;
    const low = (bits >> 64n) & 0xfffn;
    time = gregorian((high << 12n) | low);
  } else if (version === 7) {
    const ms = Number(bits >> 80n);
    time = { unix_ms: ms, timestamp: new Date(ms).toISOString() };
  }
  const valid = version >= 1 && version <= 8;
  return { ...facts, ...(time ?? {}), valid, ...(valid ? {} : { note: `Version ${version} is not defined by RFC 9562` }) };
}

function ulidFacts(s: string): IdFacts {
  let n = 0n;
  for (const ch of s.toUpperCase()) n = (n << 5n) | BigInt(CROCKFORD.indexOf(ch));
  const ms = Number(n >> 80n);
  return { valid: true, kind: 'ulid', canonical: s.toUpperCase(), version: null, variant: null, unix_ms: ms, timestamp: ms <= 8.64e15 ? new Date(ms).toISOString() : null };
}

/** What an id is, from its text alone. */
export function inspectId(value: string): IdFacts {
  const v = value.trim();
  const u = UUID.exec(v);
  if (u) return uuidFacts(u.slice(1).join('').toLowerCase());
  if (ULID.test(v)) return ulidFacts(v);
  const none = { canonical: null, version: null, variant: null, timestamp: null, unix_ms: null };
  // A nanoid has no structure: 21 URL-safe characters is all there is to recognise.
  if (NANOID.test(v)) return { valid: true, kind: 'nanoid', ...none, note: 'Shape of a default nanoid (21 URL-safe characters); it carries no time or version' };
  return { valid: false, kind: 'unknown', ...none, note: 'Not a UUID (RFC 9562), a ULID or a default nanoid' };
}
