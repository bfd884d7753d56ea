/**
 * Reading one data file at start-up: every record parsed once (checked, its id and index keys
 * read), its JSON text kept. Pure and self-contained, so that it runs in the load worker
 * (./segment-worker.ts) as well as on the main thread.
 */
import { indexKey, indexValue } from './index-key.js';
import { CorruptFile, lineOffsets, textsAt, wholeDocument } from './segment-file.js';
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
  /** Per index field (in the order asked), each record's index key. */
  keys: string[][];
}

/** The record texts of a parsed segment. */
export function segmentLines(p: ParsedSegment): string[] {
  if (p.lines) return p.lines;
  return textsAt(Buffer.from(p.buf!.buffer, p.buf!.byteOffset, p.buf!.byteLength), p.offsets!);
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

/**
 * Parses a data file's content. The one-record-per-line layout first; a file laid out otherwise
 * (edited by hand) is parsed as a whole document. Throws CorruptSegment with the reason.
 */
export function parseSegment(buf: Buffer, def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): ParsedSegment {
  const offsets = lineOffsets(buf);
  let lines: string[] | undefined;
  let recs: Array<Record<string, unknown>> | undefined;
  if (offsets) {
    try {
      recs = parseTexts(offsets.length / 2, (i) => buf.toString('utf8', offsets[2 * i], offsets[2 * i + 1]));
    } catch {
      recs = undefined; // not one record per line after all: parse the document as a whole
    }
  }
  if (!recs) {
    try {
      const whole = wholeDocument(buf);
      lines = whole;
      recs = parseTexts(whole.length, (i) => whole[i]!);
    } catch (err) {
      throw new CorruptSegment(err instanceof CorruptFile || err instanceof SyntaxError ? err.message : String(err));
    }
  }
  const ids = new Array<string>(recs.length);
  const keys = fields.map(() => new Array<string>(recs.length));
  for (let i = 0; i < recs.length; i++) {
    const r = recs[i]!;
    let id: string;
    try {
      id = recordId(def, r);
    } catch (err) {
      throw new CorruptSegment(`record ${i}: ${(err as Error).message}`);
    }
    ids[i] = id;
    for (let f = 0; f < fields.length; f++) keys[f]![i] = indexKey(indexValue(r[fields[f]!]), id);
  }
  return lines ? { lines, ids, keys } : { buf, offsets: offsets!, ids, keys };
}
