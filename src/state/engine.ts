import { SortedIndex } from './sorted-index.js';
import {
  REMOVE,
  StoreError,
  type Collection,
  type CollectionDef,
  type IndexValue,
  type NumberField,
  type Query,
  type Remove,
  type Store,
  type Updater,
  type WriteOptions,
} from './types.js';

/** Lazy writes reach the disk within this many ms (CONTRACT §7 allows 1 s of clicks). */
export const LAZY_FLUSH_MS = 500;
/** After a failed flush, dirty data is retried after this many ms (new durable writes retry at once). */
const RETRY_MS = 1000;
const DEFAULT_SEGMENT_SIZE = 5000;
/** Largest serialised record; a store is not a blob store. */
export const MAX_RECORD_BYTES = 1024 * 1024;
const MAX_ID_LENGTH = 1024;

type Rec = Record<string, unknown>;

/** The records of one file as the persistence layer sees them. */
export interface SegmentData {
  collection: string;
  segment: number;
  records: readonly object[];
  /** JSON.stringify of each record, computed once when it was written. */
  lines: readonly string[];
}

/** Where an engine's state goes. The memory store has none. */
export interface Persister {
  /** Writes these segment files; resolves only when all are durable. */
  write(segments: SegmentData[]): Promise<void>;
  close(): Promise<void>;
}

export interface EngineOptions {
  kind: string;
  persister?: Persister;
  /** Records read at start-up, per collection, per segment number. */
  loaded?: Map<string, Map<number, object[]>>;
  onFlushError?: (err: unknown) => void;
  /** Called once the store is closed (after the last flush), e.g. to release a lock. */
  onClose?: () => Promise<void>;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) deepFreeze(x);
    Object.freeze(v);
  }
  return v;
}

function deepEqual(a: unknown, b: unknown): boolean {
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

function indexValue(v: unknown): IndexValue {
  if (v === undefined || v === null) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  return null;
}

/** The JSON text of every stored record, so a flush only joins strings. */
const jsonOf = new WeakMap<object, string>();

interface Segment {
  no: number;
  ids: Set<string>;
}

class Table<T extends object> {
  readonly records = new Map<string, Rec>();
  readonly indexes = new Map<string, SortedIndex>();
  readonly segments: Segment[] = [];
  readonly segOf = new Map<string, Segment>();
  readonly segmentSize: number;

  constructor(readonly def: CollectionDef<T>) {
    this.segmentSize = def.segmentSize ?? DEFAULT_SEGMENT_SIZE;
    for (const f of def.indexes ?? []) this.indexes.set(f, new SortedIndex());
  }

  idOf(r: Rec): string {
    return r[this.def.key] as string;
  }

  /** Normalises a record to plain frozen JSON; throws BAD_RECORD for what cannot be stored. */
  normalise(record: unknown): Rec {
    if (typeof record !== 'object' || record === null || Array.isArray(record)) {
      throw new StoreError('BAD_RECORD', `${this.def.name}: a record must be an object`);
    }
    let json: string;
    try {
      json = JSON.stringify(record);
    } catch (err) {
      throw new StoreError('BAD_RECORD', `${this.def.name}: record is not JSON-serialisable`, { cause: err });
    }
    if (json.length > MAX_RECORD_BYTES) {
      throw new StoreError('BAD_RECORD', `${this.def.name}: record is larger than ${MAX_RECORD_BYTES} bytes`);
    }
    const r = JSON.parse(json) as Rec;
    const id = r[this.def.key];
    if (typeof id !== 'string' || id === '' || id.length > MAX_ID_LENGTH) {
      throw new StoreError('BAD_RECORD', `${this.def.name}: field "${this.def.key}" must be a non-empty string of at most ${MAX_ID_LENGTH} characters`);
    }
    deepFreeze(r);
    jsonOf.set(r, json);
    return r;
  }

  /** While loading, indexes are left alone and built once at the end (rebuildIndexes). */
  bulk = false;

  rebuildIndexes(): void {
    for (const [field, idx] of this.indexes) {
      idx.load([...this.records].map(([id, r]) => [indexValue(r[field]), id]));
    }
  }

  /** Places a record (already normalised) without persistence bookkeeping; returns its segment. */
  set(id: string, next: Rec | undefined, segmentHint?: number): Segment | undefined {
    const prev = this.records.get(id);
    if (!this.bulk) for (const [field, idx] of this.indexes) {
      if (prev) idx.remove(indexValue(prev[field]), id);
      if (next) idx.add(indexValue(next[field]), id);
    }
    let seg = this.segOf.get(id);
    if (next) {
      this.records.set(id, next);
      if (!seg) {
        seg = segmentHint !== undefined ? this.segmentNo(segmentHint) : this.segmentWithRoom();
        seg.ids.add(id);
        this.segOf.set(id, seg);
      }
    } else {
      this.records.delete(id);
      if (seg) {
        seg.ids.delete(id);
        this.segOf.delete(id);
      }
    }
    return seg;
  }

  segmentNo(no: number): Segment {
    let seg = this.segments.find((s) => s.no === no);
    if (!seg) {
      seg = { no, ids: new Set() };
      this.segments.push(seg);
      this.segments.sort((a, b) => a.no - b.no);
    }
    return seg;
  }

  /** The lowest-numbered segment with room, or a new one after the last. */
  segmentWithRoom(): Segment {
    for (const s of this.segments) if (s.ids.size < this.segmentSize) return s;
    const no = (this.segments[this.segments.length - 1]?.no ?? 0) + 1;
    return this.segmentNo(no);
  }

  snapshot(seg: Segment): SegmentData {
    const records: Rec[] = [];
    const lines: string[] = [];
    for (const id of seg.ids) {
      const r = this.records.get(id)!;
      records.push(r);
      lines.push(jsonOf.get(r) ?? JSON.stringify(r));
    }
    return { collection: this.def.name, segment: seg.no, records, lines };
  }

  select(q: Query<T>): string[] {
    const limit = q.limit ?? Infinity;
    const where = q.where ? Object.entries(q.where) : [];
    const matches = (id: string) => {
      if (where.length === 0) return true;
      const r = this.records.get(id)!;
      return where.every(([k, v]) => deepEqual(r[k], v));
    };
    const out: string[] = [];
    if (limit <= 0) return out;
    if (q.index === undefined) {
      const ids = [...this.records.keys()].sort();
      if (q.order === 'desc') ids.reverse();
      for (const id of ids) {
        if (matches(id)) out.push(id);
        if (out.length >= limit) break;
      }
      return out;
    }
    const idx = this.indexes.get(q.index);
    if (!idx) throw new StoreError('BAD_RECORD', `${this.def.name}: "${q.index}" is not an index`);
    const [start, end] = idx.bounds(q);
    if (q.order === 'desc') {
      for (let i = end - 1; i >= start && out.length < limit; i--) if (matches(idx.idAt(i))) out.push(idx.idAt(i));
    } else {
      for (let i = start; i < end && out.length < limit; i++) if (matches(idx.idAt(i))) out.push(idx.idAt(i));
    }
    return out;
  }

  countOf(q: Query<T>): number {
    if (q.index !== undefined && q.where === undefined) {
      const idx = this.indexes.get(q.index);
      if (!idx) throw new StoreError('BAD_RECORD', `${this.def.name}: "${q.index}" is not an index`);
      const [start, end] = idx.bounds(q);
      return end - start;
    }
    if (q.index === undefined && q.where === undefined) return this.records.size;
    return this.select({ ...q, limit: undefined }).length;
  }
}

type Waiter = { resolve: () => void; reject: (err: unknown) => void };

/**
 * The store engine: every collection lives in memory (indexed), and changes reach the
 * persister by group commit — one flush at a time writes every file changed since the last
 * one, and all writers waiting on those changes are answered together when it completes.
 */
export class Engine implements Store {
  readonly kind: string;
  readonly #tables = new Map<string, Table<object>>();
  readonly #collections = new Map<string, Collection<object>>();
  readonly #persister: Persister | undefined;
  readonly #loaded: Map<string, Map<number, object[]>>;
  readonly #dirty = new Map<Table<object>, Set<Segment>>();
  #waiters: Waiter[] = [];
  #flushing: Promise<void> | null = null;
  #scheduled = false;
  #lazyTimer: NodeJS.Timeout | null = null;
  #closed = false;
  #closing: Promise<void> | null = null;
  readonly #opts: EngineOptions;

  constructor(opts: EngineOptions) {
    this.kind = opts.kind;
    this.#persister = opts.persister;
    this.#loaded = opts.loaded ?? new Map();
    this.#opts = opts;
  }

  collection<T extends object>(def: CollectionDef<T>): Collection<T> {
    const existing = this.#tables.get(def.name);
    if (existing) {
      const d = existing.def;
      const same = d.key === def.key && JSON.stringify([...(d.indexes ?? [])].sort()) === JSON.stringify([...(def.indexes ?? [])].sort());
      if (!same) throw new Error(`Collection "${def.name}" was already defined with another key or indexes`);
      return this.#collections.get(def.name) as unknown as Collection<T>;
    }
    const table = new Table<T>(def);
    const loaded = this.#loaded.get(def.name);
    if (loaded) {
      // n splices into a sorted array are O(n²): 100k records with scattered index values took ~15 s.
      table.bulk = true;
      for (const [no, records] of [...loaded].sort((a, b) => a[0] - b[0])) {
        table.segmentNo(no);
        for (const raw of records) {
          const r = table.normalise(raw);
          const id = table.idOf(r);
          // A record in two files (a crash between two renames of one unacknowledged flush):
          // keep the later file's copy and rewrite both so the duplicate goes away.
          const prevSeg = table.segOf.get(id);
          if (prevSeg) {
            table.set(id, undefined);
            this.#markDirty(table as unknown as Table<object>, prevSeg);
            const seg = table.set(id, r, no);
            if (seg) this.#markDirty(table as unknown as Table<object>, seg);
          } else table.set(id, r, no);
        }
      }
      table.bulk = false;
      table.rebuildIndexes();
      this.#loaded.delete(def.name);
    }
    this.#tables.set(def.name, table as unknown as Table<object>);
    const coll = this.#makeCollection(table);
    this.#collections.set(def.name, coll as unknown as Collection<object>);
    return coll;
  }

  #assertOpen(): void {
    if (this.#closed || this.#closing) throw new StoreError('CLOSED', 'The store is closed');
  }

  #markDirty(table: Table<object>, seg: Segment): void {
    let set = this.#dirty.get(table);
    if (!set) this.#dirty.set(table, (set = new Set()));
    set.add(seg);
  }

  /** Applies one change and returns what the caller waits on. */
  #apply<T extends object>(table: Table<T>, id: string, next: Rec | undefined, opts: WriteOptions | undefined): Promise<void> {
    const prevSeg = table.segOf.get(id);
    const seg = table.set(id, next);
    const t = table as unknown as Table<object>;
    if (prevSeg && prevSeg !== seg) this.#markDirty(t, prevSeg);
    if (seg) this.#markDirty(t, seg);
    return this.#commit(opts?.durability ?? 'durable');
  }

  #commit(durability: 'durable' | 'lazy'): Promise<void> {
    if (!this.#persister) {
      this.#dirty.clear();
      return Promise.resolve();
    }
    if (durability === 'lazy') {
      this.#scheduleLazy(LAZY_FLUSH_MS);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      this.#kick();
    });
  }

  #scheduleLazy(ms: number): void {
    if (this.#lazyTimer) return;
    this.#lazyTimer = setTimeout(() => {
      this.#lazyTimer = null;
      this.#kick();
    }, ms);
  }

  /** Starts a flush on the next turn unless one is running (it loops over what piles up). */
  #kick(): void {
    if (this.#flushing || this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      if (!this.#flushing) this.#startFlush();
    });
  }

  #startFlush(): void {
    this.#flushing = this.#run().finally(() => {
      this.#flushing = null;
      // Writers that arrived between the loop's last check and now.
      if (this.#waiters.length > 0) this.#kick();
    });
  }

  async #run(): Promise<void> {
    while (this.#dirty.size > 0 || this.#waiters.length > 0) {
      const waiters = this.#waiters;
      this.#waiters = [];
      const dirty = [...this.#dirty];
      this.#dirty.clear();
      if (this.#lazyTimer) {
        clearTimeout(this.#lazyTimer);
        this.#lazyTimer = null;
      }
      // Records are frozen and replaced, never mutated: this snapshot stays consistent while
      // the files are written, and later changes go to the next flush.
      const batch: SegmentData[] = [];
      for (const [table, segs] of dirty) for (const seg of segs) batch.push(table.snapshot(seg));
      try {
        if (batch.length > 0) await this.#persister!.write(batch);
      } catch (err) {
        // Unknown outcome for these changes: they stay in memory and are written again by the
        // next flush (every flush rewrites whole files, so a retry is complete).
        for (const [table, segs] of dirty) for (const seg of segs) this.#markDirty(table, seg);
        const e = err instanceof StoreError ? err : new StoreError('WRITE_FAILED', `Could not write the store: ${(err as Error).message}`, { cause: err });
        for (const w of waiters) w.reject(e);
        this.#opts.onFlushError?.(e);
        if (!this.#closing) this.#scheduleLazy(RETRY_MS);
        return;
      }
      for (const w of waiters) w.resolve();
    }
  }

  async flush(): Promise<void> {
    if (!this.#persister) return;
    if (this.#dirty.size === 0 && !this.#flushing && this.#waiters.length === 0) return;
    await this.#commit('durable');
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    this.#closing = (async () => {
      try {
        if (this.#persister) {
          for (;;) {
            if (this.#flushing) await this.#flushing;
            else if (this.#scheduled) await new Promise((r) => setImmediate(r));
            else if (this.#dirty.size > 0 || this.#waiters.length > 0) {
              const done = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
              this.#startFlush();
              await done;
            } else break;
          }
        }
      } finally {
        if (this.#lazyTimer) clearTimeout(this.#lazyTimer);
        this.#lazyTimer = null;
        this.#closed = true;
        try {
          await this.#persister?.close();
        } finally {
          await this.#opts.onClose?.();
        }
      }
    })();
    return this.#closing;
  }

  #makeCollection<T extends object>(table: Table<T>): Collection<T> {
    const clone = (r: Rec | undefined) => (r === undefined ? undefined : (structuredClone(r) as T));
    const self = this;
    const checkId = (id: unknown) => {
      if (typeof id !== 'string') throw new StoreError('BAD_RECORD', `${table.def.name}: an id must be a string`);
    };
    return {
      name: table.def.name,
      async get(id) {
        self.#assertOpen();
        checkId(id);
        return clone(table.records.get(id));
      },
      async put(record, opts) {
        self.#assertOpen();
        const r = table.normalise(record);
        await self.#apply(table, table.idOf(r), r, opts);
      },
      async insert(record, opts) {
        self.#assertOpen();
        const r = table.normalise(record);
        const id = table.idOf(r);
        if (table.records.has(id)) return false;
        await self.#apply(table, id, r, opts);
        return true;
      },
      async delete(id, opts) {
        self.#assertOpen();
        checkId(id);
        if (!table.records.has(id)) return false;
        await self.#apply(table, id, undefined, opts);
        return true;
      },
      async update(id, fn: Updater<T>, opts) {
        self.#assertOpen();
        checkId(id);
        const out = fn(clone(table.records.get(id)));
        if (out === undefined) return clone(table.records.get(id));
        if (out === REMOVE) {
          if (table.records.has(id)) await self.#apply(table, id, undefined, opts);
          return undefined;
        }
        const r = table.normalise(out);
        if (table.idOf(r) !== id) throw new StoreError('BAD_RECORD', `${table.def.name}: update may not change the id`);
        await self.#apply(table, id, r, opts);
        return clone(r);
      },
      async compareAndSet(id, expected, next: T | Remove, opts) {
        self.#assertOpen();
        checkId(id);
        if (!deepEqual(table.records.get(id), expected === undefined ? undefined : JSON.parse(JSON.stringify(expected)))) return false;
        if (next === REMOVE) {
          if (table.records.has(id)) await self.#apply(table, id, undefined, opts);
          return true;
        }
        const r = table.normalise(next);
        if (table.idOf(r) !== id) throw new StoreError('BAD_RECORD', `${table.def.name}: compareAndSet may not change the id`);
        await self.#apply(table, id, r, opts);
        return true;
      },
      async increment(id, field: NumberField<T>, by, opts) {
        self.#assertOpen();
        checkId(id);
        if (!Number.isFinite(by)) throw new StoreError('BAD_RECORD', `${table.def.name}: increment must be a finite number`);
        const current = table.records.get(id) ?? table.normalise(opts.init);
        const base = current[field];
        const next = table.normalise({ ...current, ...opts.set, [field]: (typeof base === 'number' ? base : 0) + by });
        if (table.idOf(next) !== id) throw new StoreError('BAD_RECORD', `${table.def.name}: increment may not change the id`);
        await self.#apply(table, id, next, opts);
        return clone(next)!;
      },
      async query(q = {}) {
        self.#assertOpen();
        return table.select(q).map((id) => clone(table.records.get(id))!);
      },
      async count(q = {}) {
        self.#assertOpen();
        return table.countOf(q);
      },
    };
  }
}

/** A store that keeps everything in memory (tests, and a model of what adapters must do). */
export function createMemoryStore(): Store {
  return new Engine({ kind: 'memory' });
}
