/**
 * The rules every backend applies to records and definitions, so that the file, memory and
 * Redis stores refuse, accept and compare the same things (docs/state.md). Backend-neutral:
 * no backend imports another's modules, only these.
 */
import { StoreError, type AnyCollectionDef } from './types.js';

/** A record as stored: a JSON object. */
export type Rec = Record<string, unknown>;

/** Largest serialised record; a store is not a blob store. */
export const MAX_RECORD_BYTES = 1024 * 1024;

/** Longest id, in UTF-16 code units. */
export const MAX_ID_LENGTH = 1024;

/**
 * A record's JSON: an object, serialisable, at most MAX_RECORD_BYTES. Throws BAD_RECORD
 * (naming the collection) for anything else.
 */
export function recordJson(name: string, record: unknown): string {
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    throw new StoreError('BAD_RECORD', `${name}: a record must be an object`);
  }
  let json: string;
  try {
    json = JSON.stringify(record);
  } catch (err) {
    throw new StoreError('BAD_RECORD', `${name}: record is not JSON-serialisable`, { cause: err });
  }
  if (json.length > MAX_RECORD_BYTES) throw new StoreError('BAD_RECORD', `${name}: record is larger than ${MAX_RECORD_BYTES} bytes`);
  return json;
}

/** The id of a record of `def`, or BAD_RECORD. */
export function recordId(def: Pick<AnyCollectionDef, 'name' | 'key'>, rec: Rec): string {
  const id = rec[def.key];
  if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
    throw new StoreError('BAD_RECORD', `${def.name}: field "${def.key}" must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  return id;
}

/** Two definitions of one collection agree: same id field, same indexes (in any order). */
export function sameDef(a: AnyCollectionDef, b: AnyCollectionDef): boolean {
  return a.key === b.key && JSON.stringify([...(a.indexes ?? [])].sort()) === JSON.stringify([...(b.indexes ?? [])].sort());
}

/** Equality of JSON values, as `where` filters and compareAndSet compare them (key order aside). */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!deepEqual((a as Rec)[k], (b as Rec)[k])) return false;
  }
  return true;
}
