/**
 * Wall-clock ⇄ instant arithmetic in IANA zones, shared by cron_parse and timezone_convert.
 * Luxon supplies the zone offsets; the rules for times that DST skips or repeats live here, in
 * one place, so both tools agree.
 */
import { IANAZone } from 'luxon';
import { z } from 'zod';

const DAY = 86_400_000;

// Letters first, then the characters tz names use. Refuses offsets ("+05:00"), paths ("../x"),
// NUL bytes and the like before they reach Intl.
const ZONE_SHAPE = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,2}$/;

/** True for an IANA time-zone name that this runtime knows (case-insensitive, like Intl). */
export function isValidZone(name: string): boolean {
  return name.length <= 64 && ZONE_SHAPE.test(name) && IANAZone.isValidZone(name);
}

/** A zod string that only accepts IANA zone names (unknown zones fail validation → 400). */
export function zoneSchema(what: string) {
  return z
    .string()
    .max(64)
    .refine(isValidZone, { message: `${what} is not a known IANA time zone name (e.g. "Europe/Paris", "UTC")` });
}

/** Offset of `zone` from UTC at `instant`, in milliseconds (whole seconds: LMT offsets have seconds). */
export function offsetAt(zone: string, instant: number): number {
  return Math.round(IANAZone.create(zone).offset(instant) * 60) * 1000;
}

export type WallResolution =
  | { kind: 'exact'; instant: number }
  /** The wall time happens twice (clocks went back); `instant` is the earlier one. */
  | { kind: 'ambiguous'; instant: number; later: number }
  /** The wall time never happens (clocks went forward); `instant` reads it with the offset in force before the jump. */
  | { kind: 'gap'; instant: number; offsetBefore: number; offsetAfter: number };

/**
 * Finds the instant(s) at which a local wall-clock time occurs in `zone`. `wall` is the local
 * time written as if it were UTC (Date.UTC(y, m-1, d, h, mi, s)).
 */
export function resolveWall(zone: string, wall: number): WallResolution {
  // The offsets in force a day either side cover any single transition near this wall time.
  const before = offsetAt(zone, wall - DAY);
  const after = offsetAt(zone, wall + DAY);
  const found: number[] = [];
  for (const o of before === after ? [before] : [before, after]) {
    const instant = wall - o;
    if (offsetAt(zone, instant) === o) found.push(instant);
  }
  // A transition closer than a day to `wall` with the same offset either side (rare) still
  // leaves the current offset as a candidate.
  if (found.length === 0) {
    const o = offsetAt(zone, wall - offsetAt(zone, wall));
    if (offsetAt(zone, wall - o) === o) found.push(wall - o);
  }
  found.sort((a, b) => a - b);
  const [first, second] = found;
  if (first !== undefined && second !== undefined && second !== first) return { kind: 'ambiguous', instant: first, later: second };
  if (first !== undefined) return { kind: 'exact', instant: first };
  return { kind: 'gap', instant: wall - before, offsetBefore: before, offsetAfter: after };
}

/** "+08:00", "-03:30", "+00:00"; seconds only when the offset has them (local mean time). */
export function formatOffset(offsetMs: number): string {
  const sign = offsetMs < 0 ? '-' : '+';
  const total = Math.abs(Math.round(offsetMs / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const hm = `${sign}${pad(h)}:${pad(m)}`;
  return s ? `${hm}:${pad(s)}` : hm;
}

/** "2026-11-22T09:00:00" for a wall time written as if UTC. */
export function formatWall(wall: number): string {
  return new Date(wall).toISOString().slice(0, 19);
}

/** The local view of an instant in a zone: `{zone, datetime, offset, iso}`. */
export function zonedView(zone: string, instant: number): { zone: string; datetime: string; offset: string; iso: string } {
  const offset = offsetAt(zone, instant);
  const datetime = formatWall(instant + offset);
  const off = formatOffset(offset);
  return { zone, datetime, offset: off, iso: `${datetime}.000${off}` };
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

