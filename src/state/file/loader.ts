import { buildTreeInSlices, mergeInSlices, Slicer, sortInSlices } from './bulk.js';
import { indexKey, indexValue } from '../index-key.js';
import { CorruptSegment, type ParsedSegment } from './parse-segment.js';
import type { Rec } from '../records.js';
import { textOf, type Segment, type Table } from './table.js';
import type { AnyCollectionDef, StoreError } from '../types.js';

/** Where a table's records come from at start-up. */
export interface SegmentSource {
  /** Segment numbers, ascending. */
  readonly segments: readonly number[];
  /** Starts reading the files, in the order of `segments`: on a worker thread for a large collection, here otherwise. */
  open(def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): SegmentStream;
  /** Keeps the file aside and returns the error that stops the load (CORRUPT). */
  corrupt(segment: number, reason: string): StoreError;
}

/** One collection's files as they are read. */
export interface SegmentStream {
  /**
   * File `i` parsed (see parseSegment); without index keys when they come sorted from
   * `sortedKeys`. Rejects with CorruptSegment for a file that cannot be loaded.
   */
  file(i: number): Promise<ParsedSegment>;
  /** Per field, the keys of every file as sorted lists to merge (the load workers'); undefined when they have not read them all. */
  sortedKeys(): Promise<string[][][] | undefined>;
}

/**
 * Loads a table from its files: each file parsed once (checked, ids and index keys read; see
 * SegmentSource.open) while this thread adds them to the table in slices. A record is kept as
 * its JSON text: its place in the file's bytes, which the segment keeps (see Segment). Then
 * each index is bulk-built from its keys, sorted (by the load worker, or here). A record found
 * in two files (a crash between two renames of one unacknowledged flush) is kept from the
 * later file; `onDuplicate` is told both segments so they are rewritten without it.
 */
export async function loadTable(table: Table, source: SegmentSource, slicer: Slicer, onDuplicate: (seg: Segment) => void): Promise<void> {
  const fields = [...table.indexes.keys()];
  const keys = fields.map((): string[] => []);
  /** A file came without its keys: they come sorted from the worker, or are rebuilt from the records. */
  let keyless = false;
  /** Index keys of copies replaced by a later file's, with how many times each was replaced. */
  const dropped = new Map<string, number>();
  const n = source.segments.length;
  const stream = source.open(table.def, fields);
  const byId = table.byId;
  const ask = (i: number) => {
    if (i >= n) return undefined;
    const p = stream.file(i);
    p.catch(() => {}); // awaited in its turn; a failure then is what counts
    return p;
  };
  let next = ask(0);
  for (let i = 0; i < n; i++) {
    const no = source.segments[i]!;
    const seg = table.segment(no);
    let parsed: ParsedSegment;
    try {
      parsed = await next!;
    } catch (err) {
      if (err instanceof CorruptSegment) throw source.corrupt(no, err.message);
      throw err;
    }
    next = ask(i + 1);
    // This segment is marked for a rewrite only once it holds its records (below): a flush
    // during the loop would write it as far as the load had got.
    let rewrite = parsed.repeated === true;
    const fileValues = parsed.values;
    if (!fileValues) keyless = true;
    const ids = parsed.ids;
    const hashes = parsed.hashes;
    const count = hashes.length;
    const buf = parsed.buf && Buffer.from(parsed.buf.buffer, parsed.buf.byteOffset, parsed.buf.byteLength);
    const offsets = parsed.offsets;
    // Without the ids (the load worker's), each is read from the bytes only when needed.
    const idOf = ids ? (r: number) => ids[r]! : (r: number) => table.readId(buf!, offsets![2 * r]!, offsets![2 * r + 1]!);
    // The files hold about as many records each: room for all of them at once.
    if (i === 0) byId.reserve(byId.size + count * n);
    for (let r = 0; r < count; r++) {
      const h = hashes[r]!;
      const prev = byId.getOrAddHashed(h, seg.slot, idOf, r);
      if (prev) {
        const id = idOf(r);
        const old = JSON.parse(textOf(prev, id)!) as Rec;
        for (const f of fields) {
          const k = indexKey(indexValue(old[f]), id);
          dropped.set(k, (dropped.get(k) ?? 0) + 1);
        }
        byId.move(id, seg.slot, h);
        prev.recs.delete(id);
        onDuplicate(prev);
        rewrite = true;
      }
      if (fileValues) for (let f = 0; f < fields.length; f++) keys[f]!.push(indexKey(fileValues[f]![r]!, idOf(r)));
      const pause = slicer.tick();
      if (pause) await pause;
    }
    // The segment takes the file's records once they are all in the directory: until then a
    // candidate in this segment (an equal hash) must not be confirmed by a record further on.
    seg.loadFile(hashes, ids, parsed.lines, buf, offsets, table.readId);
    if (rewrite) onDuplicate(seg);
  }
  if (fields.length === 0) return;
  const sorted = keyless ? await stream.sortedKeys() : undefined;
  // The worker stopped partway (the rest was read here): the keys come from the records.
  if (keyless && !sorted) return buildIndexes(table, fields, slicer);
  for (let f = 0; f < fields.length; f++) {
    let list = sorted ? await mergeInSlices(sorted[f]!, slicer) : await sortInSlices(keys[f]!, slicer);
    if (dropped.size > 0) {
      list = list.filter((k) => {
        const n = dropped.get(k);
        if (!n) return true;
        dropped.set(k, n - 1);
        return false;
      });
    }
    table.indexes.set(fields[f]!, await buildTreeInSlices(list, slicer));
  }
}

/** Builds the indexes of `fields` from the table's records (a table adopted by a definition). */
export async function buildIndexes(table: Table, fields: readonly string[], slicer: Slicer): Promise<void> {
  const keys = fields.map((): string[] => []);
  for (const [id, seg] of table.byId.entries()) {
    const r = JSON.parse(textOf(seg, id)!) as Rec;
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
