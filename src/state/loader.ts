import { buildTreeInSlices, Slicer, sortInSlices } from './bulk.js';
import { indexKey, indexValue } from './index-key.js';
import { CorruptSegment, segmentLines, type ParsedSegment } from './segment-parse.js';
import type { Rec, Segment, Table } from './table.js';
import type { AnyCollectionDef, StoreError } from './types.js';

/** Where a table's records come from at start-up. */
export interface SegmentSource {
  /** Segment numbers, ascending. */
  readonly segments: readonly number[];
  /**
   * One data file parsed (see parseSegment): on a worker thread for a large collection, here
   * otherwise. Rejects with CorruptSegment for a file that cannot be loaded.
   */
  parse(segment: number, def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): Promise<ParsedSegment>;
  /** Keeps the file aside and returns the error that stops the load (CORRUPT). */
  corrupt(segment: number, reason: string): StoreError;
}

/** Files parsed ahead of the one being added to the table (the load worker keeps busy). */
const AHEAD = 4;

/**
 * Loads a table from its files: each file parsed once (checked, ids and index keys read; see
 * SegmentSource.parse) while this thread adds the previous ones to the table in slices and
 * keeps each record as its JSON text; then each index is sorted and bulk-built. A record
 * found in two files (a crash between two renames of one unacknowledged flush) is kept from
 * the later file; `onDuplicate` is told both segments so they are rewritten without it.
 */
export async function loadTable(table: Table, source: SegmentSource, slicer: Slicer, onDuplicate: (seg: Segment) => void): Promise<void> {
  const fields = [...table.indexes.keys()];
  const keys = fields.map((): string[] => []);
  /** Index keys of copies replaced by a later file's, with how many times each was replaced. */
  const dropped = new Map<string, number>();
  const n = source.segments.length;
  const inflight: Array<Promise<ParsedSegment> | undefined> = [];
  const start = (i: number) => {
    if (i >= n) return;
    const p = source.parse(source.segments[i]!, table.def, fields);
    p.catch(() => {}); // awaited in its turn; a failure then is what counts
    inflight[i] = p;
  };
  for (let i = 0; i < AHEAD; i++) start(i);
  for (let i = 0; i < n; i++) {
    const no = source.segments[i]!;
    const seg = table.segment(no);
    let parsed: ParsedSegment;
    try {
      parsed = await inflight[i]!;
    } catch (err) {
      if (err instanceof CorruptSegment) throw source.corrupt(no, err.message);
      throw err;
    }
    inflight[i] = undefined;
    start(i + AHEAD);
    const texts = segmentLines(parsed);
    const ids = parsed.ids;
    for (let r = 0; r < ids.length; r++) {
      const id = ids[r]!;
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
      seg.recs.set(id, texts[r]!);
      table.byId.set(id, seg);
      for (let f = 0; f < fields.length; f++) keys[f]!.push(parsed.keys[f]![r]!);
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
