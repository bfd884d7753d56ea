/**
 * The Redis adapter (REDIS_URL): every collection in Redis, shared by any number of server
 * processes. Same interface and guarantees as the file store (docs/state.md), with Redis's
 * own durability (AOF everysec recommended). Key layout and scripts: ./scripts.ts.
 *
 * - Writes are one Lua script each: the record, its id and its index entries change together.
 * - `update`, `compareAndSet` and `increment` are optimistic: read, compute, then write only if
 *   the record is still the one read (the script compares the JSON text); on a conflict the
 *   script returns the current text and the loop goes again. Nothing is lost under contention
 *   from any number of processes. `increment` and a `hot` update skip the read when this
 *   process knows the version it last wrote.
 * - `insertCapped` counts the cap's index range and inserts in the same script: exact across
 *   processes (the short-link quota, the task cap).
 * - Index order is Redis's byte order of the UTF-8 index keys, which equals the embedded
 *   stores' UTF-16 order except between characters above U+FFFF and U+E000–U+FFFF.
 */
import { indexKey, indexValue, keyBounds } from '../index-key.js';
import { deepEqual, recordId, recordJson, sameDef, type Rec } from '../records.js';
import {
  checkCollectionDef,
  REMOVE,
  StoreError,
  type AnyCollectionDef,
  type CappedInsert,
  type Collection,
  type CollectionDef,
  type CollectionInfo,
  type InsertCap,
  type NumberField,
  type Query,
  type Remove,
  type ScannedRecord,
  type Store,
  type StoreHealth,
  type UpdateOptions,
  type Updater,
} from '../types.js';
import type { RedisConnection } from './connection.js';
import { defineScripts, type ScriptedRedis } from './scripts.js';
import { RedisSignals } from './signals.js';
import { RedisWindows } from './windows.js';

/** Records per script call when a query or scan walks a range (Lua's unpack stays small). */
const PAGE = 500;
/** Ids whose last known version each collection keeps (see RedisCollection.#recent). */
const RECENT_MAX = 10_000;
/** Optimistic retries of one update before giving up (each is one round trip). */
const MAX_CAS_ROUNDS = 10_000;

interface Normalised {
  id: string;
  json: string;
  rec: Rec;
}

/** Checks a record and serialises it (the embedded stores' rules); throws BAD_RECORD for what cannot be stored. */
function normalise(def: AnyCollectionDef, record: unknown): Normalised {
  const json = recordJson(def.name, record);
  const rec = JSON.parse(json) as Rec;
  return { id: recordId(def, rec), json, rec };
}

/** Lexicographic bounds of a query on an index, in ZRANGEBYLEX syntax. */
function lexBounds(q: import('../index-key.js').Range): [string, string] {
  const [low, high] = keyBounds(q);
  return [low === undefined ? '-' : `[${low}`, high === undefined ? '+' : `(${high}`];
}

interface Keys {
  data: string;
  ids: string;
  /** Per index field, in definition order: [zset, hash]. */
  index: Map<string, [string, string]>;
  /** KEYS of the write script. */
  writeKeys: string[];
}

export class RedisStore implements Store {
  readonly kind = 'redis';
  readonly #r: ScriptedRedis;
  readonly #defs = new Map<string, AnyCollectionDef>();
  readonly #collections = new Map<string, Collection<object>>();
  readonly #registered = new Map<string, Promise<void>>();
  #closed = false;
  #ready = true;
  readonly windows: RedisWindows = new RedisWindows(this);
  readonly signals: RedisSignals;

  constructor(
    readonly conn: RedisConnection,
    readonly prefix: string,
  ) {
    this.#r = defineScripts(conn.redis);
    this.signals = new RedisSignals(conn, prefix);
  }

  get ready(): boolean {
    return this.#ready && !this.#closed;
  }

  health(): StoreHealth {
    return this.conn.health();
  }

  /** The key of something shared that is not a collection (limits, leases). */
  key(...parts: string[]): string {
    return `${this.prefix}{${parts[0]}}${parts.length > 1 ? ':' + parts.slice(1).join(':') : ''}`;
  }

  keysOf(def: AnyCollectionDef): Keys {
    const base = `${this.prefix}{${def.name}}`;
    const index = new Map<string, [string, string]>();
    for (const f of def.indexes ?? []) index.set(f, [`${base}:ix:${f}`, `${base}:iv:${f}`]);
    const writeKeys = [`${base}:data`, `${base}:ids`];
    for (const [z, h] of index.values()) writeKeys.push(z, h);
    return { data: `${base}:data`, ids: `${base}:ids`, index, writeKeys };
  }

  #registry(): string {
    return `${this.prefix}collections`;
  }

  assertOpen(): void {
    if (this.#closed) throw new StoreError('CLOSED', 'The store is closed');
  }

  run<T>(what: string, fn: (r: ScriptedRedis) => Promise<T>): Promise<T> {
    this.assertOpen();
    return this.conn.run(what, () => fn(this.#r));
  }

  /** Records the definition in Redis (for exports and other processes); once per process. */
  #register(def: AnyCollectionDef): Promise<void> {
    let p = this.#registered.get(def.name);
    if (!p) {
      p = this.run('register', (r) => r.hset(this.#registry(), def.name, JSON.stringify({ key: def.key, indexes: def.indexes ?? [], segmentSize: def.segmentSize })).then(() => {}));
      p.catch(() => this.#registered.delete(def.name));
      this.#registered.set(def.name, p);
    }
    return p;
  }

  collection<T extends object>(def: CollectionDef<T>): Collection<T> {
    const d = def as unknown as AnyCollectionDef;
    const existing = this.#defs.get(def.name);
    if (existing) {
      if (existing !== d && !sameDef(existing, d)) throw new Error(`Collection "${def.name}" was already defined with another key or indexes`);
      return this.#collections.get(def.name) as unknown as Collection<T>;
    }
    checkCollectionDef(d);
    this.#defs.set(def.name, d);
    const coll = new RedisCollection<T>(this, d);
    this.#collections.set(def.name, coll as unknown as Collection<object>);
    return coll;
  }

  /**
   * Records each definition and, when Redis holds records of a collection whose stored
   * definition lacks some of these indexes (an import written without them), builds them.
   */
  async preload(defs: readonly AnyCollectionDef[]): Promise<void> {
    this.assertOpen();
    this.#ready = false;
    try {
      for (const d of defs) {
        this.collection(d as CollectionDef<object>);
        const stored = await this.run('read definitions', (r) => r.hget(this.#registry(), d.name));
        const had = stored ? ((JSON.parse(stored) as { indexes?: string[] }).indexes ?? []) : [];
        const missing = (d.indexes ?? []).filter((f) => !had.includes(f));
        if (stored && missing.length > 0) await this.#reindex(d);
        this.#registered.delete(d.name);
        await this.#register(d);
      }
    } finally {
      this.#ready = true;
    }
  }

  /** Rewrites every record of a collection through the write script (idempotent), so its indexes hold. */
  async #reindex(def: AnyCollectionDef): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const page = await this.scan(def.name, { after, limit: PAGE });
      if (page.length === 0) return;
      await this.#putPage(def, page.map((p) => JSON.parse(p.json) as Rec));
      after = page[page.length - 1]!.id;
    }
  }

  async #putPage(def: AnyCollectionDef, records: readonly object[]): Promise<void> {
    const keys = this.keysOf(def);
    const ns = records.map((r) => normalise(def, r));
    await this.run('write', async (r) => {
      const pipe = r.pipeline() as unknown as ScriptedRedis & { exec(): Promise<[Error | null, unknown][] | null> };
      for (const n of ns) pipe.dtbWrite(keys.writeKeys.length, ...keys.writeKeys, ...writeArgs('put', n.id, n.json, '', undefined, def, n.rec));
      const res = await pipe.exec();
      for (const [err] of res ?? []) if (err) throw err;
    });
  }

  async listCollections(known: readonly AnyCollectionDef[] = []): Promise<CollectionInfo[]> {
    const stored = await this.run('read definitions', (r) => r.hgetall(this.#registry()));
    const defs = new Map<string, AnyCollectionDef>();
    for (const [name, json] of Object.entries(stored)) {
      const s = JSON.parse(json) as { key: string; indexes?: string[]; segmentSize?: number };
      defs.set(name, { name, key: s.key, ...(s.indexes?.length ? { indexes: s.indexes } : {}), ...(s.segmentSize ? { segmentSize: s.segmentSize } : {}) });
    }
    for (const d of [...known, ...this.#defs.values()]) if (!defs.has(d.name)) defs.set(d.name, d);
    const out: CollectionInfo[] = [];
    for (const name of [...defs.keys()].sort()) {
      const def = this.#defs.get(name) ?? defs.get(name)!;
      const count = await this.run('count', (r) => r.hlen(this.keysOf(def).data));
      out.push({ def: { name: def.name, key: def.key, ...(def.segmentSize ? { segmentSize: def.segmentSize } : {}) }, count });
    }
    return out;
  }

  async scan(name: string, opts: { after?: string; limit: number }): Promise<ScannedRecord[]> {
    const keys = this.keysOf({ name, key: 'id' });
    const out: ScannedRecord[] = [];
    let min = opts.after === undefined ? '-' : `(${opts.after}`;
    while (out.length < opts.limit) {
      const n = Math.min(PAGE, opts.limit - out.length);
      const flat = (await this.run('scan', (r) => r.dtbRange(2, keys.ids, keys.data, min, '+', '0', String(n), '0'))) as (string | null)[];
      for (let i = 0; i < flat.length; i += 2) if (flat[i + 1] != null) out.push({ id: flat[i]!, json: flat[i + 1]! });
      if (flat.length / 2 < n) break;
      min = `(${flat[flat.length - 2]}`;
    }
    return out;
  }

  async putMany(def: AnyCollectionDef, records: readonly object[]): Promise<void> {
    const known = this.#defs.get(def.name);
    if (known && known.key !== def.key) throw new StoreError('BAD_RECORD', `Collection "${def.name}" is keyed by "${known.key}", not "${def.key}"`);
    let use = known;
    if (!use) {
      const stored = await this.run('read definitions', (r) => r.hget(this.#registry(), def.name));
      if (stored) {
        const s = JSON.parse(stored) as { key: string; indexes?: string[]; segmentSize?: number };
        if (s.key !== def.key) throw new StoreError('BAD_RECORD', `Collection "${def.name}" is keyed by "${s.key}", not "${def.key}"`);
        use = { name: def.name, key: s.key, ...(s.indexes?.length ? { indexes: s.indexes } : {}), ...(def.segmentSize ? { segmentSize: def.segmentSize } : {}) };
      } else use = checkCollectionDef(def);
      await this.run('register', (r) => r.hset(this.#registry(), def.name, JSON.stringify({ key: use!.key, indexes: use!.indexes ?? [], segmentSize: use!.segmentSize })));
    } else await this.#register(known!);
    for (let i = 0; i < records.length; i += PAGE) await this.#putPage(use, records.slice(i, i + PAGE));
  }

  async flush(): Promise<void> {
    // Every acknowledged write is in Redis already.
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.signals.close();
    await this.conn.close();
  }

  register(def: AnyCollectionDef): Promise<void> {
    return this.#register(def);
  }
}

/** The ARGV of the write script for a record (index keys computed here, in JS, with the embedded stores' encoding). */
function writeArgs(mode: string, id: string, json: string, expected: string, cap: { pos: number; low: string; high: string; max: number } | undefined, def: AnyCollectionDef, rec: Rec | undefined): string[] {
  const args = [mode, id, json, expected, cap ? String(cap.pos) : '0', cap?.low ?? '', cap?.high ?? '', cap ? String(cap.max) : '0'];
  for (const f of def.indexes ?? []) args.push(rec ? indexKey(indexValue(rec[f]), id) : '');
  return args;
}

/** A record's state inside a batch: its JSON text (undefined = absent) and, when known, its parsed form. */
interface Doc {
  json: string | undefined;
  rec?: Rec;
}

interface Op {
  apply(cur: Doc): { next: Doc; result: unknown };
  /** Always writes (an increment): its result is checked by the compare-and-set, so it may start from a cached version. */
  blind: boolean;
  resolve(v: unknown): void;
  reject(err: unknown): void;
}

const parse = <T>(json: string | null | undefined): T | undefined => (json == null ? undefined : (JSON.parse(json) as T));

class RedisCollection<T extends object> implements Collection<T> {
  readonly name: string;
  readonly #keys: Keys;
  readonly #table: AnyCollectionDef;

  constructor(
    readonly store: RedisStore,
    readonly def: AnyCollectionDef,
  ) {
    this.name = def.name;
    this.#keys = store.keysOf(def);
    this.#table = def;
  }

  #checkId(id: unknown): asserts id is string {
    if (typeof id !== 'string') throw new StoreError('BAD_RECORD', `${this.name}: an id must be a string`);
  }

  /** One write script call. */
  async #write(mode: string, id: string, json: string, expected: string, rec: Rec | undefined, cap?: { pos: number; low: string; high: string; max: number }): Promise<[number, string | number | null]> {
    await this.store.register(this.def);
    const k = this.#keys.writeKeys;
    const res = (await this.store.run('write', (r) => r.dtbWrite(k.length, ...k, ...writeArgs(mode, id, json, expected, cap, this.def, rec)))) as [number, string | number | null];
    return res;
  }

  async get(id: string): Promise<T | undefined> {
    this.#checkId(id);
    return parse<T>(await this.store.run('get', (r) => r.hget(this.#keys.data, id)));
  }

  async put(record: T): Promise<void> {
    this.store.assertOpen();
    const n = normalise(this.#table, record);
    await this.#write('put', n.id, n.json, '', n.rec);
  }

  async insert(record: T): Promise<boolean> {
    this.store.assertOpen();
    const n = normalise(this.#table, record);
    const [ok] = await this.#write('put', n.id, n.json, '-', n.rec);
    return ok === 1;
  }

  async insertCapped(record: T, cap: InsertCap<T>): Promise<CappedInsert> {
    this.store.assertOpen();
    const n = normalise(this.#table, record);
    const pos = (this.def.indexes ?? []).indexOf(cap.within.index as string) + 1;
    if (pos === 0) throw new StoreError('BAD_RECORD', `${this.name}: "${String(cap.within.index)}" is not an index`);
    const [low, high] = lexBounds(cap.within);
    const [ok] = await this.#write('capped', n.id, n.json, '-', n.rec, { pos, low, high, max: cap.max });
    return ok === 1 ? 'inserted' : ok === 2 ? 'full' : 'taken';
  }

  async delete(id: string): Promise<boolean> {
    this.#checkId(id);
    this.store.assertOpen();
    const [, deleted] = await this.#write('del', id, '', '', undefined);
    return deleted === 1;
  }

  /** Read-modify-write operations waiting per id (see #modify). */
  readonly #queues = new Map<string, Op[]>();
  /**
   * The last version this process wrote or was told of, per id (a bounded cache). A batch of
   * increments starts from it instead of reading first: the compare-and-set finds out if it is
   * stale and answers with the current version. Saves a round trip per click counted.
   */
  readonly #recent = new Map<string, string | undefined>();

  #remember(id: string, json: string | undefined): void {
    this.#recent.delete(id);
    this.#recent.set(id, json);
    if (this.#recent.size > RECENT_MAX) this.#recent.delete(this.#recent.keys().next().value!);
  }

  /**
   * A read-modify-write of one record. Operations on one id from this process run as one
   * batch: read the record once, apply each operation in order (as if one after another),
   * write the result once, over the version read (the script compares the JSON text). If
   * another process wrote in between, the script answers with the current text and the batch
   * is computed again from it. So contention costs one round trip per batch, not per call,
   * and nothing is lost whatever the number of processes.
   */
  #modify<R>(id: string, apply: (cur: Doc) => { next: Doc; result: R }, blind = false): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const op: Op = { apply, blind, resolve: resolve as (v: unknown) => void, reject };
      const q = this.#queues.get(id);
      if (q) {
        q.push(op);
        return;
      }
      this.#queues.set(id, [op]);
      void this.#drain(id);
    });
  }

  async #drain(id: string): Promise<void> {
    let cur: string | undefined;
    for (;;) {
      const batch = this.#queues.get(id)!;
      if (batch.length === 0) {
        this.#queues.delete(id);
        return;
      }
      const ops = batch.splice(0, batch.length);
      try {
        // Each batch reads the record first, unless it only holds increments and a recent version is known.
        let cached = ops.every((o) => o.blind) && this.#recent.has(id);
        if (cached) cur = this.#recent.get(id);
        else cur = (await this.store.run('get', (r) => r.hget(this.#keys.data, id))) ?? undefined;
        for (let attempt = 0; ; attempt++) {
          if (attempt >= MAX_CAS_ROUNDS) throw new StoreError('UNAVAILABLE', `${this.name}: too much contention on "${id}"; retry`);
          let doc: Doc = { json: cur };
          const results: { ok: true; value: unknown }[] | { ok: false; err: unknown }[] = [];
          const outs: Array<{ ok: boolean; value?: unknown; err?: unknown }> = results;
          for (const op of ops) {
            try {
              const o = op.apply(doc);
              doc = o.next;
              outs.push({ ok: true, value: o.result });
            } catch (err) {
              outs.push({ ok: false, err });
            }
          }
          if (doc.json === cur && cached) {
            // Nothing to write, so nothing would check the cached version: read it.
            cur = (await this.store.run('get', (r) => r.hget(this.#keys.data, id))) ?? undefined;
            cached = false;
            continue;
          }
          if (doc.json === cur) {
            ops.forEach((op, i) => (outs[i]!.ok ? op.resolve(outs[i]!.value) : op.reject(outs[i]!.err)));
            break;
          }
          const expected = cur === undefined ? '-' : `=${cur}`;
          const [ok, now] = doc.json === undefined ? await this.#write('casdel', id, '', expected, undefined) : await this.#write('cas', id, doc.json, expected, doc.rec);
          if (ok === 1) {
            cur = doc.json;
            this.#remember(id, cur);
            ops.forEach((op, i) => (outs[i]!.ok ? op.resolve(outs[i]!.value) : op.reject(outs[i]!.err)));
            break;
          }
          cur = (now as string | null) ?? undefined;
          cached = false;
          this.#remember(id, cur);
        }
      } catch (err) {
        for (const op of ops) op.reject(err);
      }
    }
  }

  async update(id: string, fn: Updater<T>, opts?: UpdateOptions): Promise<T | undefined> {
    this.#checkId(id);
    this.store.assertOpen();
    return this.#modify(
      id,
      (cur) => {
        const out = fn(parse<T>(cur.json));
        if (out === undefined) return { next: cur, result: parse<T>(cur.json) };
        if (out === REMOVE) return { next: { json: undefined }, result: undefined };
        const n = normalise(this.#table, out);
        if (n.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: update may not change the id`);
        return { next: { json: n.json, rec: n.rec }, result: parse<T>(n.json) };
      },
      // hot: from the version this process last wrote, like an increment (checked by the compare-and-set).
      opts?.hot === true,
    );
  }

  async compareAndSet(id: string, expected: T | undefined, next: T | Remove): Promise<boolean> {
    this.#checkId(id);
    this.store.assertOpen();
    const want = expected === undefined ? undefined : (JSON.parse(JSON.stringify(expected)) as unknown);
    let n: Normalised | undefined;
    if (next !== REMOVE) {
      n = normalise(this.#table, next);
      if (n.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: compareAndSet may not change the id`);
    }
    return this.#modify(id, (cur) => {
      if (!deepEqual(parse(cur.json), want)) return { next: cur, result: false };
      return { next: n ? { json: n.json, rec: n.rec } : { json: undefined }, result: true };
    });
  }

  async increment(id: string, field: NumberField<T>, by: number, opts: { init: T; set?: Partial<T> }): Promise<T> {
    this.#checkId(id);
    this.store.assertOpen();
    if (!Number.isFinite(by)) throw new StoreError('BAD_RECORD', `${this.name}: increment must be a finite number`);
    return this.#modify(id, (cur) => {
      const current = cur.json !== undefined ? (cur.rec ?? (JSON.parse(cur.json) as Rec)) : normalise(this.#table, opts.init).rec;
      const base = current[field];
      const n = normalise(this.#table, { ...current, ...opts.set, [field]: (typeof base === 'number' ? base : 0) + by });
      if (n.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: increment may not change the id`);
      return { next: { json: n.json, rec: n.rec }, result: JSON.parse(n.json) as T };
    }, true);
  }

  /** Pages through a zset range; `take` returns false to stop. */
  async #walk(q: Query<T>, take: (json: string) => boolean): Promise<void> {
    let zset: string;
    let isIndex: '0' | '1';
    let [min, max] = ['-', '+'];
    if (q.index !== undefined) {
      const z = this.#keys.index.get(q.index);
      if (!z) throw new StoreError('BAD_RECORD', `${this.name}: "${q.index}" is not an index`);
      zset = z[0];
      isIndex = '1';
      [min, max] = lexBounds(q);
    } else {
      zset = this.#keys.ids;
      isIndex = '0';
    }
    const rev = q.order === 'desc';
    for (;;) {
      const flat = (await this.store.run('query', (r) => r.dtbRange(2, zset, this.#keys.data, min, max, rev ? '1' : '0', String(PAGE), isIndex))) as (string | null)[];
      for (let i = 0; i < flat.length; i += 2) {
        const json = flat[i + 1];
        if (json != null && !take(json)) return;
      }
      if (flat.length / 2 < PAGE) return;
      const last = flat[flat.length - 2]!;
      if (rev) max = `(${last}`;
      else min = `(${last}`;
    }
  }

  async query(q: Query<T> = {}): Promise<T[]> {
    this.store.assertOpen();
    const limit = q.limit ?? Infinity;
    const out: T[] = [];
    if (limit <= 0) {
      if (q.index !== undefined && !this.#keys.index.has(q.index)) throw new StoreError('BAD_RECORD', `${this.name}: "${q.index}" is not an index`);
      return out;
    }
    const where = q.where ? Object.entries(q.where) : [];
    await this.#walk(q, (json) => {
      const rec = JSON.parse(json) as Rec;
      if (where.length === 0 || where.every(([k, v]) => deepEqual(rec[k], v))) out.push(rec as T);
      return out.length < limit;
    });
    return out;
  }

  async count(q: Query<T> = {}): Promise<number> {
    this.store.assertOpen();
    if (q.where === undefined) {
      if (q.index === undefined) return this.store.run('count', (r) => r.hlen(this.#keys.data));
      const z = this.#keys.index.get(q.index);
      if (!z) throw new StoreError('BAD_RECORD', `${this.name}: "${q.index}" is not an index`);
      const [min, max] = lexBounds(q);
      return this.store.run('count', (r) => r.zlexcount(z[0], min, max));
    }
    return (await this.query({ ...q, limit: undefined })).length;
  }
}
