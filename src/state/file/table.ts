import { BTreeEx } from 'sorted-btree/extended/index.js';
import { IdDirectory, idHash } from './id-directory.js';
import { idFromBytes } from './parse-segment.js';
import { compareKeys, idOfKey, indexKey, indexValue, keyBounds } from '../index-key.js';
import { deepEqual, type Rec } from '../records.js';
import { StoreError, type AnyCollectionDef, type Query } from '../types.js';

/** A query with its field names as plain strings (the table knows no record type). */
export type AnyQuery = Omit<Query<object>, 'index' | 'where'> & { index?: string; where?: Record<string, unknown> };

export const DEFAULT_SEGMENT_SIZE = 5000;
/** Branching factor of every B+ tree here (measured: 64 beats the default 32 on inserts and scans). */
export const NODE_SIZE = 64;
/** Greater than every index key (their first character is a type tag below it). */
const ABOVE_ALL = '\x05';

/** An ordered set of strings (index keys or ids). */
export type KeyTree = BTreeEx<string, undefined>;

export function newKeyTree(): KeyTree {
  return new BTreeEx<string, undefined>(undefined, compareKeys, NODE_SIZE);
}

/**
 * One data file's worth of records. `recs` keeps each committed record as its JSON text only
 * (one copy per record; a read parses a fresh copy), in file order: a string, or for a record
 * unchanged since start-up its number `r` in the file as loaded, whose bytes `base` keeps at
 * `at[2r]` to `at[2r + 1]` (one buffer per file instead of a string per record: less to build
 * at start-up and nothing for the garbage collector to move; see textOf). A file's records
 * become a map when first needed: until then the segment keeps the list of ids the load gave
 * it (most segments of a large table are never touched between two restarts). `reserved`
 * counts records on their way in (written, not yet durable) so that a segment is not
 * overfilled meanwhile.
 */
export class Segment {
  reserved = 0;
  /** The store has written its file since the load (see asLoaded). */
  written = false;
  base: Buffer | undefined;
  at: Uint32Array | undefined;
  #recs: Map<string, string | number> | undefined;
  /** How many records the file held as loaded, until `recs` is built. */
  #count = 0;
  /** Their ids, in file order (record r is `loaded[r]`); undefined: read from `base` (readId). */
  #loaded: readonly string[] | undefined;
  /** Their texts, for a file not in the one-record-per-line layout. */
  #lines: readonly string[] | undefined;
  /** Their idHash, in file order (kept after `recs` is built: see asLoaded). */
  #hashes: Uint32Array | undefined;
  #readId: IdReader | undefined;
  /** The id #loadedAt found last, and its place (valid while `recs` is not built: then the places stay). */
  #lastId: string | undefined;
  #lastAt = -1;
  /**
   * The records as loaded by their idHash, while `recs` is not built: an open-addressing table
   * of record number + 1 (0: empty), made at the segment's first lookup (see #rowsOf).
   */
  #rows: Uint16Array | Uint32Array | undefined;

  constructor(
    readonly no: number,
    /** Its place in the table's segments in the order they were made (what the id directory stores). */
    readonly slot: number,
  ) {}

  #idAt(r: number): string {
    return this.#loaded ? this.#loaded[r]! : this.#readId!(this.base!, this.at![2 * r]!, this.at![2 * r + 1]!);
  }

  get recs(): Map<string, string | number> {
    if (this.#recs) return this.#recs;
    const m = new Map<string, string | number>();
    for (let r = 0; r < this.#count; r++) m.set(this.#idAt(r), this.#lines ? this.#lines[r]! : r);
    this.#loaded = this.#lines = this.#readId = this.#lastId = this.#rows = undefined;
    this.#count = 0;
    return (this.#recs = m);
  }

  /**
   * Whether it holds `id` (whose idHash is `h`): the map if built, else the records of that
   * hash as loaded (the directory confirms a candidate without building the map).
   */
  holds(id: string, h: number): boolean {
    if (this.#recs) return this.#recs.has(id);
    return this.#loadedAt(id, h) >= 0;
  }

  /** The place in the file as loaded of `id` (idHash `h`), or -1; only while `recs` is not built. */
  #loadedAt(id: string, h: number): number {
    const hashes = this.#hashes;
    if (this.#count === 0 || !hashes) return -1;
    // A read asks twice in a row (the directory confirms, then the text is read): once is enough.
    if (id === this.#lastId) return this.#lastAt;
    const rows = this.#rows ?? this.#rowsOf(hashes);
    const mask = rows.length - 1;
    for (let i = h & mask; ; i = (i + 1) & mask) {
      const v = rows[i]!;
      if (v === 0) return -1;
      if (hashes[v - 1] === h && this.#idAt(v - 1) === id) {
        this.#lastId = id;
        return (this.#lastAt = v - 1);
      }
    }
  }

  /**
   * Builds #rows from the loaded records' hashes: O(count) once, at most 3/4 full. Until
   * session 17 every lookup scanned the hashes (a segment holds up to 5,000 records): ≈ 10 % of
   * a uniform redirect's CPU at 200k links (issue 32). At most 16 KB per 5,000 records.
   */
  #rowsOf(hashes: Uint32Array): Uint16Array | Uint32Array {
    const n = this.#count;
    let cap = 16;
    while (cap * 3 < n * 4) cap *= 2;
    const rows = n < 0xffff ? new Uint16Array(cap) : new Uint32Array(cap);
    const mask = cap - 1;
    for (let r = 0; r < n; r++) {
      let i = hashes[r]! & mask;
      while (rows[i] !== 0) i = (i + 1) & mask;
      rows[i] = r + 1;
    }
    return (this.#rows = rows);
  }

  /**
   * The JSON text of `id` (idHash `h`), if it is here. A segment not touched since the load
   * answers from its file's bytes without building `recs`: that build reads all its ids (a
   * thousand or more), which made the first read in each segment of a large table cost as much
   * as a thousand reads (issue 32: a redirect miss at 1M links).
   */
  text(id: string, h: number): string | undefined {
    if (this.#recs) {
      const v = this.#recs.get(id);
      return typeof v === 'number' ? this.base!.toString('utf8', this.at![2 * v], this.at![2 * v + 1]) : v;
    }
    const r = this.#loadedAt(id, h);
    if (r < 0) return undefined;
    return this.#lines ? this.#lines[r] : this.base!.toString('utf8', this.at![2 * r], this.at![2 * r + 1]);
  }

  /**
   * Its file's records as loaded — each one's offsets in `base` and its id's hash — while its
   * file is the one loaded (the store has not written it since) and laid out one record per
   * line; undefined otherwise (what the load checkpoint records: see ./checkpoint.ts).
   */
  asLoaded(): { at: Uint32Array; hashes: Uint32Array } | undefined {
    if (this.written || !this.at || !this.#hashes || this.#hashes.length !== this.at.length / 2) return undefined;
    return { at: this.at, hashes: this.#hashes };
  }

  /** Its ids, in file order (without building the map). */
  ids(): Iterable<string> {
    if (this.#recs) return this.#recs.keys();
    if (this.#loaded || this.#count === 0) return this.#loaded ?? [];
    return readIds(this.#count, this.base!, this.at!, this.#readId!);
  }

  /** How many records it holds (without building the map). */
  get size(): number {
    return this.#recs ? this.#recs.size : this.#count;
  }

  /**
   * Takes a file's records as loaded: their ids' hashes (one per record), their ids (unique; or
   * undefined, read from the bytes with `readId` when needed), and either `lines` (their texts)
   * or the file's bytes with each record's offsets.
   */
  loadFile(hashes: Uint32Array, ids: readonly string[] | undefined, lines: readonly string[] | undefined, base: Buffer | undefined, at: Uint32Array | undefined, readId: IdReader): void {
    this.base = base;
    this.at = at;
    const count = hashes.length;
    if (this.#recs || this.#count > 0) {
      // Already in use (looked at during the load): straight into the map.
      const m = this.recs;
      for (let r = 0; r < count; r++) m.set(ids ? ids[r]! : readId(base!, at![2 * r]!, at![2 * r + 1]!), lines ? lines[r]! : r);
      return;
    }
    this.#count = count;
    this.#hashes = hashes;
    this.#rows = undefined;
    this.#loaded = ids;
    this.#lines = lines;
    this.#readId = readId;
  }
}

/** Reads the id of the record at `[start, end)` of a file's bytes (see idFromBytes). */
export type IdReader = (buf: Buffer, start: number, end: number) => string;

function* readIds(count: number, base: Buffer, at: Uint32Array, readId: IdReader): Generator<string> {
  for (let r = 0; r < count; r++) yield readId(base, at[2 * r]!, at[2 * r + 1]!);
}

/** The JSON text of record `id` in `seg`, if it is there. */
export function textOf(seg: Segment, id: string): string | undefined {
  const v = seg.recs.get(id);
  return typeof v === 'number' ? seg.base!.toString('utf8', seg.at![2 * v], seg.at![2 * v + 1]) : v;
}

/**
 * A change made by a writer that is not durable yet: invisible to readers until its flush
 * succeeds, dropped if it fails. `fresh`: the id was new and holds a place reserved in `seg`.
 */
export interface Pending {
  readonly table: Table;
  readonly id: string;
  json: string | undefined;
  rec: Rec | undefined;
  readonly seg: Segment;
  readonly fresh: boolean;
  /** The flush that will write it. */
  readonly gen: number;
}

/**
 * The committed state of one collection: what readers see. Ids map to their segment (a hash
 * table: O(1) reads; see IdDirectory), each index is a B+ tree of encoded (value, id) keys, and an id-ordered tree
 * is built on the first scan that needs it (exports, unindexed queries) and kept from then on.
 */
export class Table {
  def: AnyCollectionDef;
  /** Created by name for an export or import, not from a definition: no indexes yet. */
  raw: boolean;
  /** Every segment, in the order made (`slot`). */
  readonly #made: Segment[] = [];
  /** Id → its segment. */
  readonly byId = new IdDirectory<Segment>(this.#made);
  /** A record's id from its file's bytes, for segments loaded without their ids (see Segment). */
  readonly readId: IdReader = (buf, start, end) => idFromBytes(buf, start, end, this.def.key);
  readonly indexes = new Map<string, KeyTree>();
  /** The latest change per id that is not durable yet (what writers build on). */
  readonly pending = new Map<string, Pending>();
  /** Segments by ascending number. */
  readonly segs: Segment[] = [];
  readonly #segByNo = new Map<number, Segment>();
  /** No segment below this number has room. */
  #roomFrom = 0;
  #ordered: KeyTree | undefined;
  /** Ids added or removed while the id-ordered tree is being built. */
  touched: Set<string> | undefined;
  building: Promise<void> | undefined;
  /** Set while the table loads or builds; every method of its collection waits for it. */
  loading: Promise<void> | undefined;
  failed: unknown;

  constructor(def: AnyCollectionDef, raw = false) {
    this.def = def;
    this.raw = raw;
    for (const f of def.indexes ?? []) this.indexes.set(f, newKeyTree());
  }

  get segmentSize(): number {
    return this.def.segmentSize ?? DEFAULT_SEGMENT_SIZE;
  }

  get size(): number {
    return this.byId.size;
  }

  json(id: string): string | undefined {
    const h = idHash(id);
    const seg = this.byId.get(id, h);
    return seg && seg.text(id, h);
  }

  segment(no: number): Segment {
    let seg = this.#segByNo.get(no);
    if (!seg) {
      seg = new Segment(no, this.#made.length);
      this.#made.push(seg);
      this.#segByNo.set(no, seg);
      const last = this.segs[this.segs.length - 1];
      if (!last || last.no < no) this.segs.push(seg);
      else {
        this.segs.push(seg);
        this.segs.sort((a, b) => a.no - b.no);
      }
      this.#roomFrom = 0;
    }
    return seg;
  }

  /** The lowest-numbered segment with room, or a new one after the last; reserves a place in it. */
  reserve(): Segment {
    let i = this.#roomFrom;
    for (; i < this.segs.length; i++) {
      const s = this.segs[i]!;
      if (s.size + s.reserved < this.segmentSize) break;
    }
    this.#roomFrom = i;
    const seg = this.segs[i] ?? this.segment((this.segs[this.segs.length - 1]?.no ?? 0) + 1);
    seg.reserved++;
    return seg;
  }

  release(seg: Segment): void {
    seg.reserved--;
    this.#roomOpened(seg);
  }

  #roomOpened(seg: Segment): void {
    if (this.#roomFrom > 0 && this.segs[this.#roomFrom - 1]!.no >= seg.no) this.#roomFrom = 0;
  }

  /**
   * Applies a change to the committed state. `rec` is the parsed `json` when the caller has it
   * (saves a parse for the index keys). A new id goes to `seg` (reserved by the caller, or the
   * segment with room). `sameKeys`: the caller vouches that a replaced record keeps every
   * indexed field (a counter add): its index keys are not recomputed (a parse saved).
   */
  set(id: string, json: string | undefined, rec: Rec | undefined, seg: Segment | undefined, sameKeys = false): Segment | undefined {
    const cur = this.byId.get(id);
    if (this.indexes.size > 0 && !(sameKeys && cur && json !== undefined)) {
      const prev = cur && textOf(cur, id);
      const before = prev === undefined ? undefined : (JSON.parse(prev) as Rec);
      const after = json === undefined ? undefined : (rec ?? (JSON.parse(json) as Rec));
      for (const [field, tree] of this.indexes) {
        const oldKey = before && indexKey(indexValue(before[field]), id);
        const newKey = after && indexKey(indexValue(after[field]), id);
        if (oldKey === newKey) continue;
        if (oldKey !== undefined) tree.delete(oldKey);
        if (newKey !== undefined) tree.set(newKey, undefined);
      }
    }
    if (json === undefined) {
      if (!cur) return undefined;
      // The directory first: it confirms an id by its segment's recs.
      this.byId.delete(id);
      cur.recs.delete(id);
      if (this.#ordered) this.#ordered.delete(id);
      else this.touched?.add(id);
      this.#roomOpened(cur);
      return cur;
    }
    if (cur) {
      cur.recs.set(id, json);
      return cur;
    }
    const into = seg ?? this.reserveAndTake();
    into.recs.set(id, json);
    this.byId.add(id, into.slot);
    if (this.#ordered) this.#ordered.set(id, undefined);
    else this.touched?.add(id);
    return into;
  }

  reserveAndTake(): Segment {
    const seg = this.reserve();
    seg.reserved--;
    return seg;
  }

  /** The JSON lines of a segment as committed, with `changes` (id → JSON, undefined = deleted) applied. */
  lines(seg: Segment, changes?: Map<string, string | undefined>): string[] {
    const out: string[] = [];
    for (const id of seg.recs.keys()) {
      if (changes?.has(id)) {
        const next = changes.get(id);
        if (next !== undefined) out.push(next);
      } else out.push(textOf(seg, id)!);
    }
    if (changes) for (const [id, json] of changes) if (json !== undefined && !seg.recs.has(id)) out.push(json);
    return out;
  }

  get ordered(): KeyTree | undefined {
    return this.#ordered;
  }

  set ordered(tree: KeyTree) {
    this.#ordered = tree;
  }

  #index(q: AnyQuery): KeyTree {
    const tree = this.indexes.get(q.index!);
    if (!tree) throw new StoreError('BAD_RECORD', `${this.def.name}: "${q.index}" is not an index`);
    return tree;
  }

  #matcher(q: AnyQuery): ((id: string) => boolean) | undefined {
    const where = q.where ? Object.entries(q.where) : [];
    if (where.length === 0) return undefined;
    return (id) => {
      const r = JSON.parse(this.json(id)!) as Rec;
      return where.every(([k, v]) => deepEqual(r[k], v));
    };
  }

  /**
   * The ids a query selects, in order. Unindexed queries walk the id-ordered tree, which the
   * caller builds first (Engine.ordered).
   */
  select(q: AnyQuery): string[] {
    const limit = q.limit ?? Infinity;
    const out: string[] = [];
    if (limit <= 0) return out;
    const matches = this.#matcher(q);
    const take = (id: string): { break: true } | undefined => {
      if (!matches || matches(id)) out.push(id);
      return out.length >= limit ? { break: true } : undefined;
    };
    if (q.index === undefined) {
      const tree = this.#ordered!;
      if (q.order === 'desc') {
        for (const [id] of tree.entriesReversed()) if (take(id)) break;
      } else tree.forEachPair((id) => take(id));
      return out;
    }
    const tree = this.#index(q);
    const [low, high] = keyBounds(q);
    if (q.order === 'desc') {
      for (const [key] of tree.entriesReversed(high ?? ABOVE_ALL, undefined, true)) {
        if (low !== undefined && key < low) break;
        if (take(idOfKey(key))) break;
      }
    } else {
      tree.forRange(low ?? '', high ?? ABOVE_ALL, false, (key) => take(idOfKey(key)));
    }
    return out;
  }

  count(q: AnyQuery): number {
    if (q.index === undefined && q.where === undefined) return this.size;
    if (q.index !== undefined && q.where === undefined) {
      const [low, high] = keyBounds(q);
      return this.#index(q).forRange(low ?? '', high ?? ABOVE_ALL, false);
    }
    return this.select({ ...q, limit: undefined }).length;
  }

  /** Up to `limit` ids after `after`, in id order (needs the id-ordered tree). */
  idsAfter(after: string | undefined, limit: number): string[] {
    const out: string[] = [];
    if (limit <= 0) return out;
    this.#ordered!.forRange(after ?? '', ABOVE_ALL_IDS, false, (id) => {
      if (after !== undefined && id === after) return;
      out.push(id);
      return out.length >= limit ? { break: true } : undefined;
    });
    return out;
  }
}

/** Ids are at most 1024 characters: this string is greater than every one of them. */
const ABOVE_ALL_IDS = '\uffff'.repeat(1025);
