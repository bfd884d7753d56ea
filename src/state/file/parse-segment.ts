/**
 * Reading one data file at start-up: every record parsed once (checked, its id and index keys
 * read), its JSON text kept. Pure and self-contained, so that it runs in the load worker
 * (./segment-load-worker.ts) as well as on the main thread.
 */
import { idHash } from './id-directory.js';
import { encodeValue, indexValue, joinKey } from '../index-key.js';
import { fieldNames, scanRecord, type FieldName } from './record-scan.js';
import { CorruptFile, lineOffsets, wholeDocument } from './segment-file.js';
import { MAX_ID_LENGTH, recordId } from '../records.js';
import type { AnyCollectionDef, IndexValue } from '../types.js';

/** What a table needs to know of a file's records, in file order. */
export interface ParsedSegment {
  /** Each record's JSON text, for a file not in the one-record-per-line layout. */
  lines?: string[];
  /** Otherwise the file itself, and each record's `[start, end)` byte offsets in it, in pairs. */
  buf?: Uint8Array;
  offsets?: Uint32Array;
  /**
   * Each record's id. The load worker leaves them out of a file whose bytes come along (the
   * table reads one from there when it needs it: idFromBytes), so that a million strings do not
   * cross from thread to thread at start-up.
   */
  ids?: string[];
  /** Each id's idHash (what the table's id directory stores). Every id once: see `repeated`. */
  hashes: Uint32Array;
  /** The file held an id more than once: only its last copy is here, and the file should be rewritten. */
  repeated?: boolean;
  /**
   * Per index field (in the order asked), each record's value (its index key is indexKey(value,
   * id)). The load worker keeps them back and sends every file's keys sorted at the end (see
   * SegmentLoadPool).
   */
  values?: IndexValue[][];
}

/** A data file that cannot be loaded: the reason, as the store reports it. */
export class CorruptSegment extends Error {}

function parseTexts(count: number, text: (i: number) => string): Array<Record<string, unknown>> {
  const out = new Array<Record<string, unknown>>(count);
  for (let i = 0; i < count; i++) {
    const r = JSON.parse(text(i)) as unknown;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new SyntaxError(`record ${i} is not an object`);
    out[i] = r as Record<string, unknown>;
  }
  return out;
}

/** The id of record `i`, or CorruptSegment saying what is wrong with it. */
function keyOf(def: Pick<AnyCollectionDef, 'name' | 'key'>, i: number, rec: Record<string, unknown>): string {
  try {
    return recordId(def, rec);
  } catch (err) {
    throw new CorruptSegment(`record ${i}: ${(err as Error).message}`);
  }
}

/**
 * The records of a file in the one-record-per-line layout: each line read by scanRecord (the id
 * and index values straight from the bytes), or parsed when the scan leaves it to JSON.parse.
 * Undefined when a line is not a JSON object after all (the caller then parses the document as a
 * whole); a record without a valid id is CorruptSegment, as in parseSegment.
 */
function readLines(buf: Buffer, offsets: Uint32Array, def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): Omit<ParsedSegment, 'buf' | 'offsets' | 'lines'> | undefined {
  const count = offsets.length / 2;
  const names = fieldNames([def.key, ...fields]);
  const read: unknown[] = [];
  const ids = new Array<string>(count);
  const hashes = new Uint32Array(count);
  const values = fields.map(() => new Array<IndexValue>(count));
  let badId: CorruptSegment | undefined;
  for (let i = 0; i < count; i++) {
    const start = offsets[2 * i]!;
    const end = offsets[2 * i + 1]!;
    let id: string;
    if (names && scanRecord(buf, start, end, names, read) && isId(read[0])) {
      id = read[0];
      for (let f = 0; f < fields.length; f++) values[f]![i] = indexValue(read[f + 1]);
    } else {
      let r: unknown;
      try {
        r = JSON.parse(buf.toString('utf8', start, end));
      } catch {
        return undefined;
      }
      if (typeof r !== 'object' || r === null || Array.isArray(r)) return undefined;
      try {
        id = keyOf(def, i, r as Record<string, unknown>);
      } catch (err) {
        badId ??= err as CorruptSegment;
        continue;
      }
      for (let f = 0; f < fields.length; f++) values[f]![i] = indexValue((r as Record<string, unknown>)[fields[f]!]);
    }
    ids[i] = id;
    hashes[i] = idHash(id);
  }
  if (badId) throw badId;
  return { ids, hashes, values };
}

const idNames = new Map<string, FieldName[] | undefined>();

/** The id of a record the load has read before (so a valid one), from its bytes. */
export function idFromBytes(buf: Buffer, start: number, end: number, key: string): string {
  let names = idNames.get(key);
  if (!idNames.has(key)) idNames.set(key, (names = fieldNames([key])));
  const out: unknown[] = [];
  if (names && scanRecord(buf, start, end, names, out) && typeof out[0] === 'string') return out[0];
  return (JSON.parse(buf.toString('utf8', start, end)) as Record<string, unknown>)[key] as string;
}

function isId(v: unknown): v is string {
  return typeof v === 'string' && v !== '' && v.length <= MAX_ID_LENGTH;
}

/**
 * Parses a data file's content. The one-record-per-line layout first; a file laid out otherwise
 * (edited by hand) is parsed as a whole document. Throws CorruptSegment with the reason.
 */
export function parseSegment(buf: Buffer, def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): ParsedSegment {
  const offsets = lineOffsets(buf);
  const read = offsets && readLines(buf, offsets, def, fields);
  let parsed: ParsedSegment;
  if (read) parsed = { buf, offsets: offsets!, ...read };
  else {
    let lines: string[];
    let recs: Array<Record<string, unknown>>;
    try {
      lines = wholeDocument(buf);
      recs = parseTexts(lines.length, (i) => lines[i]!);
    } catch (err) {
      throw new CorruptSegment(err instanceof CorruptFile || err instanceof SyntaxError ? err.message : String(err));
    }
    const ids = new Array<string>(recs.length);
    const hashes = new Uint32Array(recs.length);
    const values = fields.map(() => new Array<IndexValue>(recs.length));
    for (let i = 0; i < recs.length; i++) {
      const r = recs[i]!;
      const id = keyOf(def, i, r);
      ids[i] = id;
      hashes[i] = idHash(id);
      for (let f = 0; f < fields.length; f++) values[f]![i] = indexValue(r[fields[f]!]);
    }
    parsed = { lines, ids, hashes, values };
  }
  const ids = parsed.ids!;
  return new Set(ids).size === ids.length ? parsed : withoutEarlierCopies({ ...parsed, ids });
}

/**
 * A file holding an id twice (edited by hand: the store never writes one) keeps the later
 * copy, as a later file's copy wins over an earlier file's; `repeated` tells the loader to
 * rewrite the file.
 */
function withoutEarlierCopies(p: ParsedSegment & { ids: string[] }): ParsedSegment {
  const last = new Map<string, number>();
  p.ids.forEach((id, i) => last.set(id, i));
  const keep = p.ids.map((_, i) => i).filter((i) => last.get(p.ids[i]!) === i);
  return {
    ...(p.lines ? { lines: keep.map((i) => p.lines![i]!) } : { buf: p.buf!, offsets: Uint32Array.from(keep.flatMap((i) => [p.offsets![2 * i]!, p.offsets![2 * i + 1]!])) }),
    ids: keep.map((i) => p.ids[i]!),
    hashes: Uint32Array.from(keep.map((i) => p.hashes[i]!)),
    values: p.values!.map((v) => keep.map((i) => v[i]!)),
    repeated: true,
  };
}

/**
 * One field's index keys of a load, gathered as they come and sorted at the end: grouped by
 * value, so that the sort compares the distinct values once and then short ids within each
 * value, not every key (value + id, often one long shared prefix) against every other. The
 * order is the keys' code-unit order: an encoded value never holds "\0\0", and one that is a
 * prefix of another sorts first (see index-key.ts). Grouped by the value itself (a Map tells 1
 * from "1", and indexValue leaves no NaN), so that each distinct value is encoded once.
 */
export class KeyGroups {
  readonly #groups = new Map<IndexValue, string[]>();

  /** Record i's key is (values[i], ids[i]). */
  add(values: readonly IndexValue[], ids: readonly string[]): void {
    const groups = this.#groups;
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      const g = groups.get(v);
      if (g) g.push(ids[i]!);
      else groups.set(v, [ids[i]!]);
    }
  }

  /** Every key added, sorted. */
  done(): string[] {
    const encoded = [...this.#groups.keys()].map((v): [string, IndexValue] => [encodeValue(v), v]);
    encoded.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const out: string[] = [];
    for (const [e, v] of encoded) {
      const ids = this.#groups.get(v)!;
      if (ids.length > 1) ids.sort();
      for (const id of ids) out.push(joinKey(e, id));
    }
    this.#groups.clear();
    return out;
  }
}
