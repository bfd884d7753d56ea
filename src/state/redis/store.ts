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
import { addEach, applyDeltas, applyMax, checkCaps, checkDeltas, checkItems, checkMax, encodeDeltas, encodeMaxima } from '../counters.js';
import { idOfKey, indexKey, indexValue, keyBounds } from '../index-key.js';
import { deepEqual, MAX_ID_LENGTH, recordId, recordJson, sameDef, type Rec } from '../records.js';
import {
  checkCollectionDef,
  REMOVE,
  StoreError,
  type AnyCollectionDef,
  type AddItem,
  type AddManyOptions,
  type AddOptions,
  type CappedInsert,
  type Collection,
  type CollectionDef,
  type CollectionInfo,
  type IndexCheck,
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
import { randomUUID } from 'node:crypto';
import { CapLocks } from './cap-lock.js';
import type { RedisConnection } from './connection.js';
import { defineScripts, type ScriptedRedis } from './scripts.js';
import { CLUSTER_SHARDS, hash32, isSlotMoving, mergeWalk, shardOf } from './shards.js';
import { RedisSignals } from './signals.js';
import { RedisWindows } from './windows.js';

/** Records per script call when a query or scan walks a range (Lua's unpack stays small). */
const PAGE = 500;
/** Ids whose last known version each collection keeps (see RedisCollection.#recent). */
const RECENT_MAX = 10_000;
/** Optimistic retries of one update before giving up (each is one round trip). */
const MAX_CAS_ROUNDS = 10_000;
/** How long an import batch is retried while a slot moves or a master fails over (ms). */
const BATCH_RETRY_MS = 20_000;
/** A capped insert's lock: its lifetime, and the longest wait for it (ms). */
const CAP_LOCK_TTL_MS = 10_000;
const CAP_LOCK_WAIT_MS = 5_000;
/** A capped insert's rounds (lock, count, insert) when its lock ran out under it each time. */
const CAP_ROUNDS = 5;
/** The longest wait for a replica to hold a cap's lock, unless set (REDIS_WAIT_TIMEOUT_MS's default). */
const LOCK_REPLICA_WAIT_MS = 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An index entry or record the check found out of step (see RedisStore.checkIndexes). */
interface IndexFinding {
  kind: 'stale' | 'wrong' | 'missing';
  /** The entry found ('' for a record without one). */
  entry: string;
  id: string;
  /** The record's version read ('' when gone). */
  text: string;
  /** The entry its value gives ('' when gone). */
  next: string;
}

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

/**
 * Whether an add's init is only its id (`{[key]: id}`, a plain object: what a counters record
 * starts from): then it needs no JSON round trip, and its JSON is onlyIdJson's.
 */
function initIsOnlyId(key: string, id: string, init: unknown): init is Rec {
  if (typeof init !== 'object' || init === null || Object.getPrototypeOf(init) !== Object.prototype) return false;
  const keys = Object.keys(init);
  return keys.length === 1 && keys[0] === key && (init as Rec)[key] === id && id !== '' && id.length <= MAX_ID_LENGTH;
}

/** The JSON of an init that is only its id. */
const onlyIdJson = (key: string, id: string): string => `{${JSON.stringify(key)}:${JSON.stringify(id)}}`;

/** A string JSON.stringify writes as it is between quotes (no quote, backslash, control character or lone surrogate half). */
const PLAIN_JSON_STRING = /^[^"\\\u0000-\u001f\ud800-\udfff]*$/;

/** An addMany item as ADDN takes it (json: undefined when its init is only the id, see onlyIdJson). */
interface AddArgs {
  id: string;
  json: string | undefined;
  deltas: object;
  added: string;
  maxima: string;
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
  /** Prefix of the records' counter hashes (a `counters` collection; same hash tag). */
  cnt: string;
  /** Prefix of the addMany tokens applied lately (`once`; same hash tag, expiring). */
  once: string;
}

/** The write script's KEYS for one record: a `counters` collection's add its counter hash. */
function writeKeysOf(def: AnyCollectionDef, k: Keys, id: string): string[] {
  return def.counters ? [...k.writeKeys, k.cnt + id] : k.writeKeys;
}

/** A stored definition as the registry holds it. */
function registryJson(def: AnyCollectionDef): string {
  return JSON.stringify({ key: def.key, indexes: def.indexes ?? [], segmentSize: def.segmentSize, ...(def.counters ? { counters: true } : {}) });
}

/** A definition from the registry. */
function fromRegistry(name: string, json: string): AnyCollectionDef {
  const s = JSON.parse(json) as { key: string; indexes?: string[]; segmentSize?: number; counters?: boolean };
  return { name, key: s.key, ...(s.indexes?.length ? { indexes: s.indexes } : {}), ...(s.segmentSize ? { segmentSize: s.segmentSize } : {}), ...(s.counters ? { counters: true } : {}) };
}

/**
 * A record's text as the scripts read it: its JSON, then for a `counters` collection "\0" and
 * its counter hash's fields and values "\0"-joined; each count adds to the JSON's field. A
 * field written as a maximum (`add`'s `max`) is kept in the hash under the character MAX_CODE + its name (a
 * control character, which no counter field may hold) and reads as the larger of it and the
 * JSON's value (an import writes the JSON).
 */
export function decodeRecord(text: string): Rec {
  const cut = text.indexOf('\0');
  if (cut < 0) return JSON.parse(text) as Rec;
  const rec = JSON.parse(text.slice(0, cut)) as Rec;
  const parts = text.slice(cut + 1).split('\0');
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const f = parts[i]!;
    const n = Number(parts[i + 1]);
    if (f.charCodeAt(0) === MAX_CODE) {
      applyMax(rec, [[f.slice(1), n]]);
      continue;
    }
    if (f === '__proto__') continue;
    const cur = rec[f];
    rec[f] = (typeof cur === 'number' ? cur : 0) + n;
  }
  return rec;
}

/** The first character of a maximum's field in a counter hash (see decodeRecord and scripts.ts ADD). */
const MAX_CODE = 1;

/** Options of a RedisStore beyond its connection and prefix. */
export interface RedisStoreOptions {
  /** Shards per collection: CLUSTER_SHARDS on a Cluster, 1 (the one-slot layout) otherwise. */
  shards?: number;
  /** A capped insert's lock lifetime (ms; tests shorten it). */
  capLockTtlMs?: number;
  /** The longest wait for a replica to hold a cap's lock (ms; REDIS_WAIT_TIMEOUT_MS). */
  lockReplicaWaitMs?: number;
}

/** The key of the lock of one cap range (its own slot): `P{<collection>:cap:<h>}`. */
function lockKeyOf(prefix: string, collection: string, pos: number, low: string, high: string): string {
  return `${prefix}{${collection}:cap:${hash32(`${pos}|${low}|${high}`).toString(36)}}`;
}

/** The key of the lock a sharded collection's capped inserts into `within` take (for tests and operators). */
export function capLockKey<T extends object>(prefix: string, def: CollectionDef<T>, within: InsertCap<T>['within']): string {
  const pos = (def.indexes ?? []).indexOf(within.index) + 1;
  const [low, high] = lexBounds(within);
  return lockKeyOf(prefix, def.name, pos, low, high);
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
  /** Shards per collection: CLUSTER_SHARDS on a Cluster, 1 (the one-slot layout) otherwise. */
  readonly shards: number;
  /** The capped inserts' locks (sharded collections only). */
  readonly capLocks: CapLocks;

  constructor(
    readonly conn: RedisConnection,
    readonly prefix: string,
    opts: number | RedisStoreOptions = {},
  ) {
    const o = typeof opts === 'number' ? { shards: opts } : opts;
    this.#r = defineScripts(conn.redis);
    this.signals = new RedisSignals(conn, prefix);
    this.shards = o.shards ?? (conn.topology.kind === 'cluster' ? CLUSTER_SHARDS : 1);
    this.capLocks = new CapLocks(conn, { ttlMs: o.capLockTtlMs ?? CAP_LOCK_TTL_MS, waitMs: CAP_LOCK_WAIT_MS, replicaWaitMs: o.lockReplicaWaitMs ?? LOCK_REPLICA_WAIT_MS });
    if (!Number.isInteger(this.shards) || this.shards < 1 || this.shards > 1024) throw new Error(`shards must be an integer in 1…1024, not ${this.shards}`);
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

  /** The keys of one shard of a collection (the one-slot layout `{name}` when unsharded). */
  keysOf(def: AnyCollectionDef, shard = 0): Keys {
    const base = this.shards === 1 ? `${this.prefix}{${def.name}}` : `${this.prefix}{${def.name}:${shard}}`;
    const index = new Map<string, [string, string]>();
    for (const f of def.indexes ?? []) index.set(f, [`${base}:ix:${f}`, `${base}:iv:${f}`]);
    const writeKeys = [`${base}:data`, `${base}:ids`];
    for (const [z, h] of index.values()) writeKeys.push(z, h);
    return { data: `${base}:data`, ids: `${base}:ids`, index, writeKeys, cnt: `${base}:cnt:`, once: `${base}:once:` };
  }

  /** The keys of every shard of a collection, by shard number. */
  allKeys(def: AnyCollectionDef): Keys[] {
    return Array.from({ length: this.shards }, (_, n) => this.keysOf(def, n));
  }

  /** The sum of a count over every shard (sent at once). */
  async sumShards(what: string, def: AnyCollectionDef, fn: (r: ScriptedRedis, k: Keys) => Promise<number>): Promise<number> {
    const counts = await Promise.all(this.allKeys(def).map((k) => this.run(what, (r) => fn(r, k))));
    return counts.reduce((a, b) => a + b, 0);
  }

  #registry(): string {
    return `${this.prefix}collections`;
  }
  /** The definition of collection `name` as Redis stores it (the registry); undefined when none is stored. */
  async #stored(name: string): Promise<AnyCollectionDef | undefined> {
    const json = await this.run('read definitions', (r) => r.hget(this.#registry(), name));
    return json ? fromRegistry(name, json) : undefined;
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
      p = this.run('register', (r) => r.hset(this.#registry(), def.name, registryJson(def)).then(() => {}));
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
      if (this.shards > 1) await this.#migrateOneSlotLayout(defs);
      for (const d of defs) {
        this.collection(d as CollectionDef<object>);
        const stored = await this.#stored(d.name);
        const had = stored?.indexes ?? [];
        const missing = (d.indexes ?? []).filter((f) => !had.includes(f));
        if (stored && missing.length > 0) {
          await this.#reindex(d);
          // Instances still on the version before may write meanwhile without this index (docs/scale-out.md).
          this.conn.log.warn(`built the index ${missing.map((f) => `"${f}"`).join(', ')} of collection "${d.name}"; once every instance runs this version, run \`devtoolbox check-indexes --repair\``);
        }
        this.#registered.delete(d.name);
        await this.#register(d);
      }
    } finally {
      this.#ready = true;
    }
  }

  /**
   * Moves records left in the one-slot layout (`{name}`, a store that ran unsharded on these
   * servers) into the shards, under a lock so one process moves them while the others wait
   * (none is ready before). A page is read with its counter hashes (a `counters` collection:
   * each record's counts folded into its JSON), copied with insert-if-absent (a record already
   * in the shards wins, with its own counts), then the old records, ids and counter hashes are
   * removed in one transaction: a crash mid-way leaves each record in one place or in both
   * (never its counts in both), and the next start finishes the move without adding a count
   * twice. The old index keys go at the end.
   */
  async #migrateOneSlotLayout(defs: readonly AnyCollectionDef[]): Promise<void> {
    const old = (d: AnyCollectionDef) => `${this.prefix}{${d.name}}`;
    const left = async () => (await Promise.all(defs.map((d) => this.run('count', (r) => r.exists(`${old(d)}:data`, `${old(d)}:ids`))))).some((n) => n > 0);
    if (!(await left())) return;
    const lock = this.key('migrate-layout');
    const token = randomUUID();
    while ((await this.run('lock', (r) => r.set(lock, token, 'PX', 300_000, 'NX'))) !== 'OK') await sleep(200);
    try {
      for (const d of defs) {
        const base = old(d);
        const cnt = d.counters ? `${base}:cnt:` : '';
        for (;;) {
          const flat = (await this.run('migrate', (r) => r.dtbRange(2, `${base}:ids`, `${base}:data`, '-', '+', '0', String(PAGE), '0', cnt))) as (string | null)[];
          if (flat.length === 0) break;
          const ids: string[] = [];
          const recs: object[] = [];
          for (let i = 0; i < flat.length; i += 2) {
            ids.push(flat[i]!);
            if (flat[i + 1] != null) recs.push(decodeRecord(flat[i + 1]!));
          }
          await this.#putPage(d, recs, '-');
          await this.run('migrate', async (r) => {
            // One slot ({name}): the record, its id and its counts leave together.
            const tx = r.multi().hdel(`${base}:data`, ...ids).zrem(`${base}:ids`, ...ids);
            if (cnt) tx.del(...ids.map((id) => cnt + id));
            for (const [err] of (await tx.exec()) ?? []) if (err) throw err;
          });
        }
        const fields = new Set([...(d.indexes ?? []), ...((await this.#stored(d.name))?.indexes ?? [])]);
        for (const f of fields) await this.run('migrate', (r) => r.del(`${base}:ix:${f}`, `${base}:iv:${f}`));
        this.conn.log.info(`moved collection "${d.name}" into ${this.shards} shards`);
      }
    } finally {
      await this.run('unlock', (r) => r.dtbUnlock(1, lock, token)).catch(() => {});
    }
  }

  /**
   * Rewrites every record of a collection through the write script, so its indexes hold. Other
   * processes may write meanwhile (an instance not yet upgraded, a click counted), so each
   * rewrite is a compare-and-set on the text read — the JSON and, for a `counters` collection,
   * its counter hash: a record changed, counted or deleted since its page was read is read
   * again (or stays deleted) instead of being overwritten with the version read. (A plain put
   * would drop an `add` that landed in between: the write folds the counter hash into the JSON
   * it was given, which lacks that add.)
   */
  async #reindex(def: AnyCollectionDef): Promise<void> {
    let after: string | undefined;
    for (;;) {
      const page: { id: string; text: string }[] = [];
      const sources = this.allKeys(def).map((k) => [k.ids, k.data, def.counters ? k.cnt : ''] as const);
      await mergeWalk((fn) => this.run('reindex', fn), { sources, min: after === undefined ? '-' : `(${after}`, max: '+', rev: false, isIndex: false, page: PAGE }, (text, id) => {
        page.push({ id, text });
        return page.length < PAGE;
      });
      if (page.length === 0) return;
      await this.#rewrite(def, page);
      after = page[page.length - 1]!.id;
    }
  }

  /**
   * The index check (`devtoolbox check-indexes`): per index and shard, every entry against its
   * record (`stale`: the record is gone; `wrong`: it holds another value — both left by an
   * instance of a version without the index, which deletes and updates records without
   * touching it), then every record against its entry (`missing`: written by such an instance).
   * Each finding is confirmed, and with `repair` fixed, by one script that first checks the
   * record is still the version read (IXFIX), so writers may run meanwhile: a record changed
   * since is judged again on its current version. The records themselves are never rewritten.
   */
  async checkIndexes(defs: readonly AnyCollectionDef[], opts: { repair: boolean; onProgress?: (c: IndexCheck) => void }): Promise<IndexCheck[]> {
    const out: IndexCheck[] = [];
    for (const def of defs) {
      if (!def.indexes?.length) continue;
      const stored = await this.#stored(def.name);
      const had = stored?.indexes ?? [];
      const checks: IndexCheck[] = def.indexes.map((f) => ({ collection: def.name, index: f, built: stored === undefined || had.includes(f), entries: 0, records: 0, stale: 0, wrong: 0, missing: 0, repaired: 0 }));
      const built = checks.filter((c) => c.built);
      if (stored !== undefined && built.length > 0) await this.#checkCollection(def, built, opts.repair);
      for (const c of checks) {
        opts.onProgress?.(c);
        out.push(c);
      }
    }
    return out;
  }

  /** The built indexes of one collection, shard by shard: their entries, then the records once for all of them. */
  async #checkCollection(def: AnyCollectionDef, checks: readonly IndexCheck[], repair: boolean): Promise<void> {
    const entryOf = new Map(checks.map((c) => [c.index, (text: string, id: string) => indexKey(indexValue(decodeRecord(text)[c.index]), id)]));
    for (const k of this.allKeys(def)) {
      const cp = def.counters ? k.cnt : '';
      // Every entry against its record (the range script reads the record of each entry's id).
      for (const c of checks) {
        const [zset, hash] = k.index.get(c.index)!;
        const keyOf = entryOf.get(c.index)!;
        await this.#pages(zset, k.data, true, cp, async (flat) => {
          const found: IndexFinding[] = [];
          for (let i = 0; i < flat.length; i += 2) {
            const entry = flat[i]!;
            const text = flat[i + 1] ?? null;
            const id = idOfKey(entry);
            c.entries++;
            if (text === null) found.push({ kind: 'stale', entry, id, text: '', next: '' });
            else {
              const want = keyOf(text, id);
              if (want !== entry) found.push({ kind: 'wrong', entry, id, text, next: want });
            }
          }
          await this.#confirmFindings(k, zset, hash, cp, found, c, repair, keyOf);
        });
      }
      // Every record against its entry in each index: one walk of the records.
      await this.#pages(k.ids, k.data, false, cp, async (flat) => {
        const ids: string[] = [];
        const recs: { text: string; rec: Rec }[] = [];
        for (let i = 0; i < flat.length; i += 2) {
          if (flat[i + 1] == null) continue;
          ids.push(flat[i]!);
          recs.push({ text: flat[i + 1]!, rec: decodeRecord(flat[i + 1]!) });
        }
        for (const c of checks) {
          c.records += ids.length;
          if (ids.length === 0) continue;
          const [zset, hash] = k.index.get(c.index)!;
          const entries = await this.run('check index', (r) => r.hmget(hash, ...ids));
          const found: IndexFinding[] = [];
          ids.forEach((id, j) => {
            if (entries[j] == null) found.push({ kind: 'missing', entry: '', id, text: recs[j]!.text, next: indexKey(indexValue(recs[j]!.rec[c.index]), id) });
          });
          await this.#confirmFindings(k, zset, hash, cp, found, c, repair, entryOf.get(c.index)!);
        }
      });
    }
  }

  /** One shard's zset (ids, or an index's keys) in pages of PAGE with their records' texts (null: gone), through the range script. */
  async #pages(zset: string, data: string, isIndex: boolean, cp: string, page: (flat: (string | null)[]) => Promise<void>): Promise<void> {
    for (let min = '-'; ; ) {
      const flat = (await this.run('check index', (r) => r.dtbRange(2, zset, data, min, '+', '0', String(PAGE), isIndex ? '1' : '0', cp))) as (string | null)[];
      await page(flat);
      if (flat.length < 2 * PAGE) return;
      min = `(${flat[flat.length - 2]!}`;
    }
  }

  /** Confirms (and with `repair` fixes) findings with IXFIX; a record changed since it was read is judged again. */
  async #confirmFindings(k: Keys, zset: string, hash: string, cp: string, found: IndexFinding[], c: IndexCheck, repair: boolean, entryOf: (text: string, id: string) => string): Promise<void> {
    let todo = found;
    for (let round = 0; todo.length > 0; round++) {
      if (round >= MAX_CAS_ROUNDS) throw new StoreError('UNAVAILABLE', `${c.collection}: too much contention while checking the index "${c.index}"; retry`);
      const args = todo.flatMap((g) => [g.entry, g.id, g.text, g.next]);
      const reply = (await this.run('check index', (r) => r.dtbIxFix(3, k.data, zset, hash, repair ? '1' : '0', cp, ...args))) as (number | string | null)[];
      const again: IndexFinding[] = [];
      todo.forEach((g, j) => {
        const status = Number(reply[2 * j]);
        if (status === 1) {
          c[g.kind]++;
          if (repair) c.repaired++;
          return;
        }
        if (status !== 0) return;
        const text = typeof reply[2 * j + 1] === 'string' ? (reply[2 * j + 1] as string) : '';
        if (g.entry === '') {
          // A record without an entry, changed since: still to index unless it went.
          if (text !== '') again.push({ ...g, text, next: entryOf(text, g.id) });
        } else if (text === '') again.push({ ...g, kind: 'stale', text: '', next: '' });
        else {
          const want = entryOf(text, g.id);
          if (want !== g.entry) again.push({ ...g, kind: 'wrong', text, next: want });
        }
      });
      todo = again;
    }
  }

  /** Rewrites records over the versions read (see #reindex), reading again those that changed. */
  async #rewrite(def: AnyCollectionDef, read: readonly { id: string; text: string }[]): Promise<void> {
    let todo = read;
    for (let round = 0; todo.length > 0; round++) {
      if (round >= MAX_CAS_ROUNDS) throw new StoreError('UNAVAILABLE', `${def.name}: too much contention while building its indexes; retry`);
      const writes = todo.map(({ text }) => ({ n: normalise(def, decodeRecord(text)), expected: `=${text}` }));
      const replies = await this.#writePage(def, writes);
      // A failed expectation answers with the current text: nil when the record was deleted meanwhile.
      todo = replies.flatMap(([ok, now], i) => (ok === 0 && typeof now === 'string' ? [{ id: writes[i]!.n.id, text: now }] : []));
    }
  }

  /** Writes a page of records: each a put (`expected` '') or an insert-if-absent ('-'). */
  async #putPage(def: AnyCollectionDef, records: readonly object[], expected: '' | '-' = ''): Promise<void> {
    await this.#writePage(
      def,
      records.map((rec) => ({ n: normalise(def, rec), expected })),
    );
  }

  /**
   * Writes a page of records, each with its expectation (see the write script): one pipeline
   * per shard (a pipeline's keys share one slot), the shards at once. The write script's
   * replies, in the order given.
   */
  async #writePage(def: AnyCollectionDef, writes: readonly { n: Normalised; expected: string }[]): Promise<[number, unknown][]> {
    const groups = new Map<number, number[]>();
    writes.forEach((w, i) => {
      const shard = shardOf(w.n.id, this.shards);
      const g = groups.get(shard);
      if (g) g.push(i);
      else groups.set(shard, [i]);
    });
    const out: [number, unknown][] = new Array(writes.length);
    await Promise.all(
      [...groups].map(async ([shard, at]) => {
        const replies = await this.#writeBatch(def, this.keysOf(def, shard), at.map((i) => writes[i]!));
        at.forEach((i, j) => (out[i] = replies[j]!));
      }),
    );
    return out;
  }

  /**
   * One shard's pipeline of writes. A batch that fails while a slot moves (MOVED, ASK,
   * TRYAGAIN) or a master fails over (CLUSTERDOWN, a lost connection on a Cluster) is sent
   * again: each write is a put or has an expectation, so sending it twice leaves what sending
   * it once does (a compare-and-set already applied answers with the text it wrote).
   */
  async #writeBatch(def: AnyCollectionDef, keys: Keys, writes: readonly { n: Normalised; expected: string }[]): Promise<[number, unknown][]> {
    const deadline = Date.now() + BATCH_RETRY_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.run('write', async (r) => {
          const pipe = r.pipeline() as unknown as ScriptedRedis & { exec(): Promise<[Error | null, unknown][] | null> };
          for (const { n, expected } of writes) {
            const k = writeKeysOf(def, keys, n.id);
            pipe.dtbWrite(k.length, ...k, ...writeArgs(expected.startsWith('=') ? 'cas' : 'put', n.id, n.json, expected, undefined, def, n.rec));
          }
          const res = (await pipe.exec()) ?? [];
          for (const [err] of res) if (err) throw err;
          return res.map(([, reply]) => reply as [number, unknown]);
        });
      } catch (err) {
        const retry = isSlotMoving(err) || (this.conn.topology.kind === 'cluster' && err instanceof StoreError && err.code === 'UNAVAILABLE');
        if (!retry || this.#closed || Date.now() >= deadline) throw err;
        await sleep(Math.min(50 * attempt, 500));
      }
    }
  }

  async listCollections(known: readonly AnyCollectionDef[] = []): Promise<CollectionInfo[]> {
    const stored = await this.run('read definitions', (r) => r.hgetall(this.#registry()));
    const defs = new Map<string, AnyCollectionDef>();
    for (const [name, json] of Object.entries(stored)) defs.set(name, fromRegistry(name, json));
    for (const d of [...known, ...this.#defs.values()]) if (!defs.has(d.name)) defs.set(d.name, d);
    const out: CollectionInfo[] = [];
    for (const name of [...defs.keys()].sort()) {
      const def = this.#defs.get(name) ?? defs.get(name)!;
      const count = await this.sumShards('count', def, (r, k) => r.hlen(k.data));
      out.push({ def: { name: def.name, key: def.key, ...(def.segmentSize ? { segmentSize: def.segmentSize } : {}), ...(def.counters ? { counters: true } : {}) }, count });
    }
    return out;
  }

  /** Records in id order (byte order), after `after`: the shards merged. */
  async scan(name: string, opts: { after?: string; limit: number }): Promise<ScannedRecord[]> {
    let def = this.#defs.get(name);
    if (!def) {
      // Its counter hashes must be read too: the registry says whether it has any.
      def = (await this.#stored(name)) ?? { name, key: 'id' };
    }
    const out: ScannedRecord[] = [];
    if (opts.limit <= 0) return out;
    const min = opts.after === undefined ? '-' : `(${opts.after}`;
    const page = Math.min(PAGE, opts.limit);
    await mergeWalk(
      (fn) => this.run('scan', fn),
      { sources: this.allKeys(def).map((k) => [k.ids, k.data, def.counters ? k.cnt : ''] as const), min, max: '+', rev: false, isIndex: false, page },
      (json, member) => {
        out.push({ id: member, json: json.includes('\0') ? JSON.stringify(decodeRecord(json)) : json });
        return out.length < opts.limit;
      },
    );
    return out;
  }

  async putMany(def: AnyCollectionDef, records: readonly object[]): Promise<void> {
    const known = this.#defs.get(def.name);
    if (known && known.key !== def.key) throw new StoreError('BAD_RECORD', `Collection "${def.name}" is keyed by "${known.key}", not "${def.key}"`);
    let use = known;
    if (!use) {
      const s = await this.#stored(def.name);
      if (s) {
        if (s.key !== def.key) throw new StoreError('BAD_RECORD', `Collection "${def.name}" is keyed by "${s.key}", not "${def.key}"`);
        use = { ...s, ...(def.segmentSize ? { segmentSize: def.segmentSize } : {}), ...(s.counters || def.counters ? { counters: true } : {}) };
      } else use = checkCollectionDef(def);
      await this.run('register', (r) => r.hset(this.#registry(), def.name, registryJson(use!)));
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
    await this.capLocks.close();
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

const parse = <T>(json: string | null | undefined): T | undefined => (json == null ? undefined : (decodeRecord(json) as T));

class RedisCollection<T extends object> implements Collection<T> {
  readonly name: string;
  /** Keys per shard. */
  readonly #shards: Keys[];
  readonly #table: AnyCollectionDef;

  constructor(
    readonly store: RedisStore,
    readonly def: AnyCollectionDef,
  ) {
    this.name = def.name;
    this.#shards = store.allKeys(def);
    this.#table = def;
  }

  /** The keys of the shard holding `id`. */
  #keys(id: string): Keys {
    return this.#shards[shardOf(id, this.#shards.length)]!;
  }

  /** Any shard's keys: for what every shard has alike (which fields are indexes). */
  get #any(): Keys {
    return this.#shards[0]!;
  }

  #checkId(id: unknown): asserts id is string {
    if (typeof id !== 'string') throw new StoreError('BAD_RECORD', `${this.name}: an id must be a string`);
  }

  /** One write script call. */
  async #write(mode: string, id: string, json: string, expected: string, rec: Rec | undefined, cap?: { pos: number; low: string; high: string; max: number }): Promise<[number, string | number | null]> {
    await this.store.register(this.def);
    const k = writeKeysOf(this.def, this.#keys(id), id);
    const res = (await this.store.run('write', (r) => r.dtbWrite(k.length, ...k, ...writeArgs(mode, id, json, expected, cap, this.def, rec)))) as [number, string | number | null];
    return res;
  }

  /** A record's text as the write script compares it (see decodeRecord). */
  #read(id: string): Promise<string | null> {
    const k = this.#keys(id);
    if (this.def.counters) return this.store.run('get', (r) => r.dtbGetC(2, k.data, k.cnt + id, id)) as Promise<string | null>;
    return this.store.run('get', (r) => r.hget(k.data, id));
  }

  async get(id: string): Promise<T | undefined> {
    this.#checkId(id);
    return parse<T>(await this.#read(id));
  }

  async getMany(ids: readonly string[]): Promise<(T | undefined)[]> {
    for (const id of ids) this.#checkId(id);
    // A counters record is its JSON and its counter hash: GETC each (one pipeline).
    if (this.def.counters) return Promise.all(ids.map(async (id) => parse<T>(await this.#read(id))));
    const out = new Array<T | undefined>(ids.length);
    const shards = new Map<Keys, number[]>();
    ids.forEach((id, i) => {
      const k = this.#keys(id);
      const at = shards.get(k);
      if (at) at.push(i);
      else shards.set(k, [i]);
    });
    await Promise.all(
      [...shards].map(async ([k, at]) => {
        const got = await this.store.run('get', (r) => r.hmget(k.data, ...at.map((i) => ids[i]!)));
        at.forEach((i, j) => (out[i] = parse<T>(got[j] ?? null)));
      }),
    );
    return out;
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
    if (this.#shards.length > 1) return this.#insertCappedSharded(n, pos, low, high, cap.max);
    const [ok] = await this.#write('capped', n.id, n.json, '-', n.rec, { pos, low, high, max: cap.max });
    return ok === 1 ? 'inserted' : ok === 2 ? 'full' : 'taken';
  }

  /**
   * The cap's range spans every shard, so no one script can count it and insert. Instead the
   * inserts into one range take turns: a lock in the range's own slot (held by a replica too
   * when there is one: ./cap-lock.ts), then the count summed over the shards, then — if the
   * lock is still ours with time left — the insert in the record's shard, then the lock freed.
   * Exact for every writer that inserts through insertCapped (the only way records enter a
   * capped range); a delete during the count can only make it refuse an insert that would have
   * fit a moment later. A holder whose lock ran out during the count starts over.
   */
  async #insertCappedSharded(n: Normalised, pos: number, low: string, high: string, max: number): Promise<CappedInsert> {
    await this.store.register(this.def);
    const lock = lockKeyOf(this.store.prefix, this.name, pos, low, high);
    const locks = this.store.capLocks;
    for (let round = 1; ; round++) {
      const token = randomUUID();
      await locks.take(lock, token);
      try {
        const zset = (k: Keys) => [...k.index.values()][pos - 1]![0];
        const count = await this.store.sumShards('count', this.def, (r, k) => r.zlexcount(zset(k), low, high));
        if (count >= max) {
          const taken = await this.store.run('get', (r) => r.hexists(this.#keys(n.id).data, n.id));
          return taken ? 'taken' : 'full';
        }
        // The count holds only while no one else could insert: the lock must still be ours.
        if (!(await locks.stillOurs(lock, token))) {
          if (round >= CAP_ROUNDS) throw new StoreError('UNAVAILABLE', `${this.name}: the cap's lock ran out before the insert ${round} times; retry`);
          continue;
        }
        const [ok] = await this.#write('put', n.id, n.json, '-', n.rec);
        return ok === 1 ? 'inserted' : 'taken';
      } finally {
        await locks.release(lock, token);
      }
    }
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
        else cur = (await this.#read(id)) ?? undefined;
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
            cur = (await this.#read(id)) ?? undefined;
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
      const current = cur.json !== undefined ? (cur.rec ?? decodeRecord(cur.json)) : normalise(this.#table, opts.init).rec;
      const base = current[field];
      const n = normalise(this.#table, { ...current, ...opts.set, [field]: (typeof base === 'number' ? base : 0) + by });
      if (n.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: increment may not change the id`);
      return { next: { json: n.json, rec: n.rec }, result: JSON.parse(n.json) as T };
    }, true);
  }

  /** An add's init, normalised and checked to be the record of `id`; throws BAD_RECORD. */
  #addInit(id: string, init: unknown): Normalised {
    const n = normalise(this.#table, init);
    if (n.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: add's init must have the id`);
    return n;
  }

  /** One add's id, init, deltas and maxima, checked (the rules of every backend); throws BAD_RECORD. */
  #checkAdd(id: string, init: T, deltas: Readonly<Record<string, number>>, max: AddOptions<T>['max']): { init: Normalised; pairs: [string, number][]; maxima: [string, number][] } {
    this.#checkId(id);
    const n = this.#addInit(id, init);
    const pairs = checkDeltas(this.name, this.def.key, n.rec, deltas);
    return { init: n, pairs, maxima: checkMax(this.name, this.def.key, n.rec, max, pairs) };
  }

  async add(id: string, deltas: Readonly<Record<string, number>>, opts: AddOptions<T>): Promise<void> {
    this.#checkId(id);
    this.store.assertOpen();
    const { init, pairs, maxima } = this.#checkAdd(id, opts.init, deltas, opts.max);
    const caps = checkCaps(this.name, opts.caps);
    if (!this.def.counters) {
      // No counter hashes: a read-modify-write, from the version last written when known.
      await this.#modify(
        id,
        (cur) => {
          const rec = cur.json !== undefined ? (cur.rec ?? decodeRecord(cur.json)) : { ...init.rec };
          applyDeltas(rec, pairs, caps);
          applyMax(rec, maxima);
          const n = normalise(this.#table, rec);
          return { next: { json: n.json, rec: n.rec }, result: undefined };
        },
        true,
      );
      return;
    }
    await this.store.register(this.def);
    const k = this.#keys(id);
    const keys = writeKeysOf(this.def, k, id);
    const args = [id, init.json];
    for (const f of this.def.indexes ?? []) args.push(indexKey(indexValue(init.rec[f]), id));
    args.push(String(caps.length));
    for (const c of caps) args.push(c.prefix, String(c.max), c.overflow);
    args.push(String(maxima.length));
    for (const [f, n] of maxima) args.push(f, String(n));
    for (const [f, n] of pairs) args.push(f, String(n));
    await this.store.run('write', (r) => r.dtbAdd(keys.length, ...keys, ...args));
    // What this process knew of the record is stale now (the next update reads).
    this.#recent.delete(id);
  }

  async addMany(items: readonly AddItem<T>[], opts: AddManyOptions = {}): Promise<PromiseSettledResult<void>[]> {
    // Index keys per record would make the batch's KEYS and checks another script: one add each.
    if (!this.def.counters || (this.def.indexes?.length ?? 0) > 0) return addEach(this, this.def, items, opts);
    this.store.assertOpen();
    checkItems(this.def, items, opts);
    const capArgs = [String(opts.caps?.length ?? 0)];
    for (const c of opts.caps ?? []) capArgs.push(c.prefix, String(c.max), c.overflow);
    const out: PromiseSettledResult<void>[] = new Array(items.length);
    // Per shard: the items' positions, the script's keys, and its arguments (see ADDN): shared
    // deltas (by object), the plain records, the others.
    const shards = new Map<Keys, { at: number[]; keys: string[]; refs: Map<object, number>; shared: string[]; plain: string; others: string[] }>();
    const encoded = new Map<object, string>();
    const plainKey = PLAIN_JSON_STRING.test(this.def.key);
    items.forEach((it, i) => {
      let a: AddArgs;
      try {
        a = this.#addArgs(it, encoded);
      } catch (reason) {
        out[i] = { status: 'rejected', reason };
        return;
      }
      const k = this.#keys(it.id);
      let g = shards.get(k);
      if (!g) shards.set(k, (g = { at: [], keys: [k.data, k.ids, k.cnt, ...(opts.once === undefined ? [] : [k.once + opts.once])], refs: new Map(), shared: [], plain: '', others: [] }));
      g.at.push(i);
      if (plainKey && a.json === undefined && PLAIN_JSON_STRING.test(a.id)) {
        // A deltas object's first record carries them; from its second on, they are shared.
        let ref = g.refs.get(a.deltas);
        if (ref === undefined) {
          g.refs.set(a.deltas, 0);
          g.plain += `${a.id}\u0001${a.maxima}${a.added}\u0001\u0002`;
        } else {
          if (ref === 0) {
            g.shared.push(a.added.slice(1));
            g.refs.set(a.deltas, (ref = g.shared.length));
          }
          g.plain += `${a.id}\u0001${a.maxima}\u0001${ref}\u0002`;
        }
      } else g.others.push(a.id, a.json ?? onlyIdJson(this.def.key, a.id), a.maxima + a.added);
    });
    if (shards.size > 0) await this.store.register(this.def);
    await Promise.all(
      [...shards.values()].map(async ({ at, keys, shared, plain, others }) => {
        let done: PromiseSettledResult<void>;
        try {
          await this.store.run('write', (r) => r.dtbAddN(keys.length, keys, capArgs, [this.def.key, String(shared.length)], shared, [plain], others));
          done = { status: 'fulfilled', value: undefined };
        } catch (reason) {
          done = { status: 'rejected', reason };
        }
        for (const i of at) {
          out[i] = done;
          this.#recent.delete(items[i]!.id);
        }
      }),
    );
    return out;
  }

  /**
   * One addMany item checked as `add` checks it, encoded for the ADDN script (see scripts.ts):
   * its deltas ("\0field\0delta" each) and maxima, and its init's JSON unless the init is only
   * the id. Deltas are checked against the init's fields: with an init of only the id they are
   * checked and encoded once per deltas object (`encoded`; the visit counts share one among
   * link-days visited alike).
   */
  #addArgs(it: AddItem<T>, encoded: Map<object, string>): AddArgs {
    const id = it.id;
    this.#checkId(id);
    // An init of only the id is used as it is (it holds nothing but the id): no normalised copy.
    const only = initIsOnlyId(this.def.key, id, it.init);
    const init = only ? undefined : this.#addInit(id, it.init);
    const rec = init?.rec ?? (it.init as Rec);
    const deltas = it.deltas;
    let added = only && typeof deltas === 'object' && deltas !== null ? encoded.get(deltas) : undefined;
    if (added === undefined) {
      added = encodeDeltas(this.name, this.def.key, rec, deltas);
      if (only) encoded.set(deltas, added);
    }
    return { id, json: init?.json, deltas, added, maxima: encodeMaxima(this.name, this.def.key, rec, it.max, deltas) };
  }

  /** Pages through a zset range, the shards merged in order; `take` returns false to stop. */
  async #walk(q: Query<T>, page: number, take: (json: string) => boolean): Promise<void> {
    let pick: (k: Keys) => string;
    let isIndex = false;
    let [min, max] = ['-', '+'];
    if (q.index !== undefined) {
      const field = q.index;
      if (!this.#any.index.has(field)) throw new StoreError('BAD_RECORD', `${this.name}: "${field}" is not an index`);
      pick = (k) => k.index.get(field)![0];
      isIndex = true;
      [min, max] = lexBounds(q);
    } else pick = (k) => k.ids;
    const sources = this.#shards.map((k) => [pick(k), k.data, this.def.counters ? k.cnt : ''] as const);
    await mergeWalk((fn) => this.store.run('query', fn), { sources, min, max, rev: q.order === 'desc', isIndex, page }, take);
  }

  async query(q: Query<T> = {}): Promise<T[]> {
    this.store.assertOpen();
    const limit = q.limit ?? Infinity;
    const out: T[] = [];
    if (limit <= 0) {
      if (q.index !== undefined && !this.#any.index.has(q.index)) throw new StoreError('BAD_RECORD', `${this.name}: "${q.index}" is not an index`);
      return out;
    }
    const where = q.where ? Object.entries(q.where) : [];
    // Over many shards a small limit needs no full page from each.
    const page = where.length === 0 && this.#shards.length > 1 ? Math.min(PAGE, Math.max(1, limit)) : PAGE;
    await this.#walk(q, page, (json) => {
      const rec = decodeRecord(json);
      if (where.length === 0 || where.every(([k, v]) => deepEqual(rec[k], v))) out.push(rec as T);
      return out.length < limit;
    });
    return out;
  }

  async count(q: Query<T> = {}): Promise<number> {
    this.store.assertOpen();
    if (q.where === undefined) {
      if (q.index === undefined) return this.store.sumShards('count', this.def, (r, k) => r.hlen(k.data));
      const field = q.index;
      if (!this.#any.index.has(field)) throw new StoreError('BAD_RECORD', `${this.name}: "${field}" is not an index`);
      const [min, max] = lexBounds(q);
      return this.store.sumShards('count', this.def, (r, k) => r.zlexcount(k.index.get(field)![0], min, max));
    }
    return (await this.query({ ...q, limit: undefined })).length;
  }
}
