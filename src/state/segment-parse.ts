/**
 * Reading one data file at start-up: every record parsed once (checked, its id and index keys
 * read), its JSON text kept. Pure and self-contained, so that it runs in the load worker
 * (./segment-worker.ts) as well as on the main thread.
 */
import { idHash } from './id-directory.js';
import { indexKey, indexValue } from './index-key.js';
import { fieldNames, scanRecord } from './record-scan.js';
import { CorruptFile, lineOffsets, wholeDocument } from './segment-file.js';
import { StoreError, type AnyCollectionDef } from './types.js';

const MAX_ID_LENGTH = 1024;

/** The id of a record of `def`, or BAD_RECORD. */
export function recordId(def: Pick<AnyCollectionDef, 'name' | 'key'>, rec: Record<string, unknown>): string {
  const id = rec[def.key];
  if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
    throw new StoreError('BAD_RECORD', `${def.name}: field "${def.key}" must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  return id;
}

/** What a table needs to know of a file's records, in file order. */
export interface ParsedSegment {
  /** Each record's JSON text, for a file not in the one-record-per-line layout. */
  lines?: string[];
  /** Otherwise the file itself, and each record's `[start, end)` byte offsets in it, in pairs. */
  buf?: Uint8Array;
  offsets?: Uint32Array;
  ids: string[];
  /** Each id's idHash (what the table's id directory stores). Every id once: see `repeated`. */
  hashes: Uint32Array;
  /** The file held an id more than once: only its last copy is here, and the file should be rewritten. */
  repeated?: boolean;
  /**
   * Per index field (in the order asked), each record's index key. The load worker keeps them
   * back and sends every file's keys sorted at the end (see SegmentParser).
   */
  keys?: string[][];
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
  const values: unknown[] = [];
  const ids = new Array<string>(count);
  const hashes = new Uint32Array(count);
  const keys = fields.map(() => new Array<string>(count));
  let badId: CorruptSegment | undefined;
  for (let i = 0; i < count; i++) {
    const start = offsets[2 * i]!;
    const end = offsets[2 * i + 1]!;
    let id: string;
    if (names && scanRecord(buf, start, end, names, values) && isId(values[0])) {
      id = values[0];
      for (let f = 0; f < fields.length; f++) keys[f]![i] = indexKey(indexValue(values[f + 1]), id);
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
      for (let f = 0; f < fields.length; f++) keys[f]![i] = indexKey(indexValue((r as Record<string, unknown>)[fields[f]!]), id);
    }
    ids[i] = id;
    hashes[i] = idHash(id);
  }
  if (badId) throw badId;
  return { ids, hashes, keys };
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
    const keys = fields.map(() => new Array<string>(recs.length));
    for (let i = 0; i < recs.length; i++) {
      const r = recs[i]!;
      const id = keyOf(def, i, r);
      ids[i] = id;
      hashes[i] = idHash(id);
      for (let f = 0; f < fields.length; f++) keys[f]![i] = indexKey(indexValue(r[fields[f]!]), id);
    }
    parsed = { lines, ids, hashes, keys };
  }
  return new Set(parsed.ids).size === parsed.ids.length ? parsed : withoutEarlierCopies(parsed);
}

/**
 * A file holding an id twice (edited by hand: the store never writes one) keeps the later
 * copy, as a later file's copy wins over an earlier file's; `repeated` tells the loader to
 * rewrite the file.
 */
function withoutEarlierCopies(p: ParsedSegment): ParsedSegment {
  const last = new Map<string, number>();
  p.ids.forEach((id, i) => last.set(id, i));
  const keep = p.ids.map((_, i) => i).filter((i) => last.get(p.ids[i]!) === i);
  return {
    ...(p.lines ? { lines: keep.map((i) => p.lines![i]!) } : { buf: p.buf!, offsets: Uint32Array.from(keep.flatMap((i) => [p.offsets![2 * i]!, p.offsets![2 * i + 1]!])) }),
    ids: keep.map((i) => p.ids[i]!),
    hashes: Uint32Array.from(keep.map((i) => p.hashes[i]!)),
    keys: p.keys!.map((k) => keep.map((i) => k[i]!)),
    repeated: true,
  };
}

/** Two lists sorted in code-unit order, merged into one. */
export function mergeSorted(a: readonly string[], b: readonly string[]): string[] {
  const out = new Array<string>(a.length + b.length);
  let i = 0;
  let j = 0;
  let k = 0;
  while (i < a.length && j < b.length) out[k++] = a[i]! <= b[j]! ? a[i++]! : b[j++]!;
  while (i < a.length) out[k++] = a[i++]!;
  while (j < b.length) out[k++] = b[j++]!;
  return out;
}

/**
 * Sorts strings (code-unit order) as they come, a batch at a time: each batch is sorted and
 * merged with the runs before it like a binary counter, so that the sorting is spread over the
 * load and only the last merges are left when the last batch is in.
 */
export class RunningSort {
  readonly #runs: string[][] = [];

  add(batch: readonly string[]): void {
    let run = batch.slice().sort();
    while (this.#runs.length > 0 && this.#runs[this.#runs.length - 1]!.length <= run.length) run = mergeSorted(this.#runs.pop()!, run);
    this.#runs.push(run);
  }

  /** Everything added, sorted. */
  done(): string[] {
    let out: string[] = [];
    while (this.#runs.length > 0) out = mergeSorted(this.#runs.pop()!, out);
    return out;
  }
}
