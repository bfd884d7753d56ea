import { buildTreeInSlices, Slicer, sortInSlices } from './bulk.js';
import { checkedId } from './collection.js';
import { indexKey, indexValue } from './index-key.js';
import type { Rec, Segment, Table } from './table.js';
import { StoreError } from './types.js';

/** One data file's records as read: the line texts, or (for another layout) a full parse. */
export interface SegmentContent {
  /** Each record's JSON text, when the file has the one-record-per-line layout. */
  lines: string[] | undefined;
  /** Parses the whole document instead; throws when it does not parse. */
  whole(): string[];
}

/** Where a table's records come from at start-up. */
export interface SegmentSource {
  /** Segment numbers, ascending. */
  readonly segments: readonly number[];
  read(segment: number): Promise<SegmentContent>;
  /** Keeps the file aside and returns the error that stops the load (CORRUPT). */
  corrupt(segment: number, reason: string): StoreError;
}

async function parseAll(texts: string[], slicer: Slicer): Promise<Rec[]> {
  const out: Rec[] = new Array<Rec>(texts.length);
  for (let i = 0; i < texts.length; i++) {
    const r = JSON.parse(texts[i]!) as unknown;
    if (typeof r !== 'object' || r === null || Array.isArray(r)) throw new SyntaxError(`record ${i} is not an object`);
    out[i] = r as Rec;
    await slicer.tick();
  }
  return out;
}

/**
 * Loads a table from its files in slices: every record parsed once (checked, its id and index
 * values read) and kept as its JSON text; then each index is sorted and bulk-built. A record
 * found in two files (a crash between two renames of one unacknowledged flush) is kept from
 * the later file; `onDuplicate` is told both segments so they are rewritten without it.
 */
export async function loadTable(table: Table, source: SegmentSource, slicer: Slicer, onDuplicate: (seg: Segment) => void): Promise<void> {
  const fields = [...table.indexes.keys()];
  const keys = fields.map((): string[] => []);
  /** Index keys of copies replaced by a later file's, with how many times each was replaced. */
  const dropped = new Map<string, number>();
  // The next file is read while this one is parsed.
  const read = (i: number) => {
    const p = i < source.segments.length ? source.read(source.segments[i]!) : undefined;
    p?.catch(() => {}); // awaited in its turn; a failure then is what counts
    return p;
  };
  let next = read(0);
  for (let i = 0; i < source.segments.length; i++) {
    const no = source.segments[i]!;
    const seg = table.segment(no);
    const content = (await next)!;
    next = read(i + 1);
    let texts = content.lines;
    let recs: Rec[] | undefined;
    if (texts) {
      try {
        recs = await parseAll(texts, slicer);
      } catch {
        recs = undefined; // not one record per line after all: parse the document as a whole
      }
    }
    if (!recs) {
      try {
        texts = content.whole();
        recs = await parseAll(texts, slicer);
      } catch (err) {
        throw source.corrupt(no, (err as Error).message);
      }
    }
    for (let i = 0; i < recs.length; i++) {
      const r = recs[i]!;
      let id: string;
      try {
        id = checkedId(table, r);
      } catch (err) {
        throw source.corrupt(no, `record ${i}: ${(err as Error).message}`);
      }
      const prev = table.byId.get(id);
      if (prev) {
        const old = JSON.parse(prev.recs.get(id)!) as Rec;
        for (const f of fields) {
          const k = indexKey(indexValue(old[f]), id);
          dropped.set(k, (dropped.get(k) ?? 0) + 1);
        }
        prev.recs.delete(id);
        onDuplicate(prev);
        onDuplicate(seg);
      }
      seg.recs.set(id, texts![i]!);
      table.byId.set(id, seg);
      for (let f = 0; f < fields.length; f++) keys[f]!.push(indexKey(indexValue(r[fields[f]!]), id));
      await slicer.tick();
    }
  }
  for (let f = 0; f < fields.length; f++) {
    let list = keys[f]!;
    if (dropped.size > 0) {
      list = list.filter((k) => {
        const n = dropped.get(k);
        if (!n) return true;
        dropped.set(k, n - 1);
        return false;
      });
    }
    table.indexes.set(fields[f]!, await buildTreeInSlices(await sortInSlices(list, slicer), slicer));
  }
}

/** Builds the indexes of `fields` from the table's records (a table adopted by a definition). */
export async function buildIndexes(table: Table, fields: readonly string[], slicer: Slicer): Promise<void> {
  const keys = fields.map((): string[] => []);
  for (const [id, seg] of table.byId) {
    const r = JSON.parse(seg.recs.get(id)!) as Rec;
    for (let f = 0; f < fields.length; f++) keys[f]!.push(indexKey(indexValue(r[fields[f]!]), id));
    await slicer.tick();
  }
  for (let f = 0; f < fields.length; f++) {
    table.indexes.set(fields[f]!, await buildTreeInSlices(await sortInSlices(keys[f]!, slicer), slicer));
  }
}

/**
 * Builds the id-ordered tree in slices while writers go on: ids changed meanwhile are noted
 * (table.touched) and applied once the tree is in place.
 */
export async function buildOrdered(table: Table, slicer: Slicer): Promise<void> {
  table.touched = new Set();
  try {
    const ids: string[] = [];
    for (const id of table.byId.keys()) {
      ids.push(id);
      await slicer.tick();
    }
    // An id removed and added again during the walk is seen twice.
    const sorted = (await sortInSlices(ids, slicer)).filter((id, i, all) => i === 0 || all[i - 1] !== id);
    const tree = await buildTreeInSlices(sorted, slicer);
    for (const id of table.touched) {
      if (table.byId.has(id)) tree.set(id, undefined);
      else tree.delete(id);
    }
    table.ordered = tree;
  } finally {
    table.touched = undefined;
  }
}
