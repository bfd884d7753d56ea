/**
 * The store interface the tools see. Records are plain JSON objects kept in named collections;
 * every method is async so that a networked adapter (Redis, Postgres) can implement the same
 * interface later without a tool changing. docs/state.md explains the guarantees.
 */

/** A value an index can hold. `undefined` fields are indexed as `null`. */
export type IndexValue = string | number | boolean | null;

/** Returned from an `update` function to delete the record. */
export const REMOVE: unique symbol = Symbol.for('devtoolbox.store.remove');
export type Remove = typeof REMOVE;

/**
 * `durable` (default): the promise resolves once the change is on disk (file written, fsynced
 * and renamed into place); until then no reader sees it, and if it cannot be written it is
 * dropped and the promise rejects with UNAVAILABLE. `lazy`: the change is applied at once and
 * written within LAZY_FLUSH_MS; a crash may lose it. For counters where a second of loss is
 * acceptable. `replicated`: durable, and on Redis with REDIS_WAIT_REPLICAS=n also held by n
 * replicas before the promise resolves (else it rejects with UNAVAILABLE, the write made on the
 * primary); elsewhere the same as `durable`. For what a user must never lose: a key issued, a
 * link or cron task created, a sign-in grant (docs/scale-out.md).
 */
export type Durability = 'durable' | 'lazy' | 'replicated';

export interface WriteOptions {
  durability?: Durability;
}

/** Options of `update`. */
export interface UpdateOptions extends WriteOptions {
  /**
   * A record this process writes often (a counter batch, e.g. a link's visits of the day): a
   * networked store may start from the version it last wrote instead of reading first, as
   * `increment` does. The compare-and-set still checks that version, so a stale start costs a
   * retry, never a lost update. Embedded stores (one process) have nothing to save and ignore it.
   */
  hot?: boolean;
}

type KeysOf<T, V> = { [K in keyof T]-?: T[K] extends V ? K : never }[keyof T] & string;
/** Fields of T that hold a string (candidates for the key). */
export type StringField<T> = KeysOf<T, string>;
/** Fields of T that hold an index value. */
export type IndexField<T> = KeysOf<T, IndexValue | undefined>;
/** Fields of T that hold a number (candidates for `increment`). */
export type NumberField<T> = KeysOf<T, number>;

/** A collection's shape: its name, the field holding each record's id, and its indexes. */
export interface CollectionDef<T extends object> {
  /** `[a-z][a-z0-9_]*`, at most 40 characters; also the data file's name. */
  readonly name: string;
  /** The field whose (non-empty string) value identifies a record. */
  readonly key: StringField<T>;
  /** Fields usable in `query({index})`: equality, ranges and ordering. */
  readonly indexes?: readonly IndexField<T>[];
  /**
   * File-backed adapters split a collection into files of at most this many records so that a
   * write rewrites one small file, not the whole collection (default 5000).
   */
  readonly segmentSize?: number;
  /**
   * Its records are mostly written by `add` (counters, e.g. visit analytics): a networked
   * store then keeps each record's counters natively (Redis: a hash per record beside its
   * JSON, changed with HINCRBY, no read first). Reads, queries and exports see the same record
   * shape either way; without it `add` works too, as a read-modify-write.
   */
  readonly counters?: boolean;
}

/** Any collection's definition, whatever its record type (lists of collections, imports). */
export interface AnyCollectionDef {
  readonly name: string;
  readonly key: string;
  readonly indexes?: readonly string[];
  readonly segmentSize?: number;
  readonly counters?: boolean;
}

/**
 * A bound on the distinct counter fields `add` creates under one prefix: once `max` fields
 * starting with `prefix` exist (`overflow` not counted), a delta for a new such field is
 * added to `overflow` instead. What keeps blind increments with hostile keys (a referrer per
 * request) from growing a record without bound.
 */
export interface CounterCap {
  prefix: string;
  max: number;
  /** Must itself start with `prefix`. */
  overflow: string;
}

/** Options of `add`. */
export interface AddOptions<T> extends WriteOptions {
  /** The record created when absent; its fields are never counters. */
  init: T;
  caps?: readonly CounterCap[];
  /**
   * Counter fields that keep the largest value given instead of a sum (e.g. the time of the
   * latest visit, in ms): blind too, so instances writing at once keep the latest. The same
   * field rules as the deltas; a field is either added to or kept as a maximum, not both.
   */
  max?: Readonly<Record<string, number>>;
}

/** One record's `add` in `addMany`: its id, deltas, init and maxima (see AddOptions). */
export interface AddItem<T> {
  id: string;
  deltas: Readonly<Record<string, number>>;
  init: T;
  max?: Readonly<Record<string, number>>;
}

/** Options of `addMany`: caps and durability, the same for every item. */
export interface AddManyOptions extends WriteOptions {
  caps?: readonly CounterCap[];
  /**
   * A token naming the batch (1–200 characters), for a batch whose call failed yet may have
   * been applied — on Redis a command timeout: the script runs once Redis answers again. Sent
   * again under the same token with its items not known to be written, it is not applied twice
   * (within ONCE_TTL_MS): on Redis each shard's items are applied once per token (the token is
   * kept beside the shard's records by the same script); the embedded stores, whose failures
   * are definite, remember a token once every item of its batch was applied. Only on
   * collections without indexes (else BAD_RECORD).
   */
  once?: string;
}

/**
 * A query over one collection. With `index`: records whose index value matches `eq` or lies in
 * the range, in index order (ties by id). Without: every record, in id order. `where` adds
 * equality tests on top-level fields. `limit` caps the result (default: no cap).
 */
export interface Query<T extends object> {
  index?: IndexField<T>;
  eq?: IndexValue;
  gt?: IndexValue;
  gte?: IndexValue;
  lt?: IndexValue;
  lte?: IndexValue;
  where?: Partial<T>;
  order?: 'asc' | 'desc';
  limit?: number;
}

/**
 * The cap of `insertCapped`: at most `max` records may lie in this index range (equality or
 * bounds on one index, as in a query).
 */
export interface InsertCap<T extends object> {
  within: Pick<Query<T>, 'eq' | 'gt' | 'gte' | 'lt' | 'lte'> & { index: IndexField<T> };
  max: number;
}

/** What `insertCapped` did: inserted; the id was taken; or the cap's range was full. */
export type CappedInsert = 'inserted' | 'taken' | 'full';

/** Computes the next version of a record from the current one (undefined = absent). */
export type Updater<T> = (current: T | undefined) => T | undefined | Remove;

/** One typed collection. Every returned record is a fresh copy the caller may mutate. */
export interface Collection<T extends object> {
  readonly name: string;
  get(id: string): Promise<T | undefined>;
  /**
   * The records of `ids`, in their order (undefined: absent), as `get` reads each: one store
   * call for them all (on Redis one HMGET per shard instead of a command each).
   */
  getMany(ids: readonly string[]): Promise<(T | undefined)[]>;
  /** Inserts or replaces. */
  put(record: T, opts?: WriteOptions): Promise<void>;
  /** Inserts only when no record has this id. Resolves true when inserted, false when taken. */
  insert(record: T, opts?: WriteOptions): Promise<boolean>;
  /**
   * Inserts only when no record has this id AND fewer than `cap.max` records lie in the cap's
   * index range, as one atomic step — across processes too, on a shared backend (Redis). For
   * quotas counted from stored records: short links per owner and day, tasks per agent.
   */
  insertCapped(record: T, cap: InsertCap<T>, opts?: WriteOptions): Promise<CappedInsert>;
  /** Resolves true when a record was deleted. */
  delete(id: string, opts?: WriteOptions): Promise<boolean>;
  /**
   * Atomic read-modify-write. `fn` gets the current record (a copy) and returns the new one,
   * `undefined` to leave it unchanged (nothing is written), or REMOVE to delete it. `fn` must
   * be pure: a networked adapter implements this as get + compareAndSet in a retry loop and may
   * call it more than once. Resolves with the record as it now is.
   */
  update(id: string, fn: Updater<T>, opts?: UpdateOptions): Promise<T | undefined>;
  /**
   * Writes `next` (or deletes, with REMOVE) only if the stored record deep-equals `expected`
   * (`undefined` = must be absent). Resolves true when written.
   */
  compareAndSet(id: string, expected: T | undefined, next: T | Remove, opts?: WriteOptions): Promise<boolean>;
  /**
   * Atomically adds `by` to a numeric field, creating the record from `init` when absent (the
   * field then starts from init's value), and sets the fields of `set` in the same step.
   * Resolves with the record after the change.
   */
  increment(id: string, field: NumberField<T>, by: number, opts: { init: T; set?: Partial<T> } & WriteOptions): Promise<T>;
  /**
   * Atomically adds integer deltas to counter fields of one record, creating it from `init`
   * when absent; a field not there yet starts from 0 (see CounterCap for `caps`). Counter
   * fields are any fields but the key and init's (at most MAX_COUNTER_FIELD characters, no
   * control characters, not `__proto__`); they read back as plain numbers of the record.
   * Blind: nothing is read first, so many processes adding to one record sum exactly. With
   * `lazy` durability the file store persists it without rewriting the record's segment
   * (its record journal: src/state/file/journal.ts).
   */
  add(id: string, deltas: Readonly<Record<string, number>>, opts: AddOptions<T>): Promise<void>;
  /**
   * Many `add`s at once (at most MAX_ADD_ITEMS), each item one atomic `add` with `opts`,
   * applied in order. Resolves with each item's outcome, in order: an item refused (BAD_RECORD,
   * storage failing) leaves the others as they are; it is not one transaction. Rejects only
   * when the batch itself is bad (not a list, too long, bad caps). What counters written by
   * the thousand use: on Redis a `counters` collection without indexes sends one script per
   * shard for its items instead of a script per record (docs/state.md).
   */
  addMany(items: readonly AddItem<T>[], opts?: AddManyOptions): Promise<PromiseSettledResult<void>[]>;
  query(q?: Query<T>): Promise<T[]>;
  /** The number of records `query(q)` would return without a limit. */
  count(q?: Query<T>): Promise<number>;
}

/** Whether the store can take writes: `ok: false` while its storage fails (it retries by itself). */
export type StoreHealth = { ok: true } | { ok: false; reason: string; since: string };

/** A collection as an export sees it: its definition (as far as the store knows it) and size. */
export interface CollectionInfo {
  def: AnyCollectionDef;
  count: number;
}

/** One record of a scan: its id and its JSON text. */
export interface ScannedRecord {
  id: string;
  json: string;
}

/** The two limit windows of one subject after a check (times: epoch ms on the backend's clock). */
export interface RateWindowsState {
  allowed: boolean;
  now: number;
  /** Calls in the last 60 s (after consuming, when allowed and consumed). */
  minuteUsed: number;
  /** Time of the oldest call in the minute log (now when none). */
  first: number;
  /** Time of the call that must leave the minute window before one more fits (now when none). */
  oldestCounted: number;
  /** Calls on the UTC day of `now`. */
  dayUsed: number;
  /**
   * Set when the call named a key generation (`rate`'s `gen`) that is no longer the subject's:
   * nothing was checked or consumed, and this is the generation the check read (issue 37).
   */
  stale?: string;
}

/** One sliding window after a check (registration). */
export interface SlideState {
  allowed: boolean;
  now: number;
  used: number;
  oldestCounted: number;
  first: number;
}

/**
 * Limit windows kept by a backend shared by several processes, each check one atomic step on
 * the backend's clock (so instance clocks do not matter). The embedded stores have none: their
 * one process keeps the windows in memory (src/auth/limiter.ts).
 */
export interface SharedWindows {
  /**
   * The sliding minute and the UTC day of `subject`; with `consume`, one unit of each only if
   * both allow. `then` (what the caller does with the state; a throw rejects) is applied before
   * the promise settles: one promise per call instead of a chain of them on the hot path.
   */
  rate<R = RateWindowsState>(subject: string, perMinute: number, perDay: number, consume: boolean, then?: (s: RateWindowsState) => R, gen?: string): Promise<R>;
  /**
   * The generation of the key record behind `subject` ('0' before its first bump): a cached
   * record read AFTER it may be used while `rate` with this `gen` does not answer `stale`.
   */
  generation(subject: string): Promise<string>;
  /** Bumps the generation of each subject: every writer of a key record calls it after the write. */
  bump(subjects: readonly string[]): Promise<void>;
  /** At most `limit` events per `windowMs` for `subject`; consumes one when allowed. */
  slide(subject: string, limit: number, windowMs: number): Promise<SlideState>;
}

/**
 * Wake-up signals between the processes sharing a backend (Redis pub/sub): at most once,
 * no payload. A process does not receive its own signals.
 */
export interface StoreSignals {
  publish(topic: string): void;
  /** Returns the unsubscribe function. */
  subscribe(topic: string, fn: () => void): () => void;
}

/**
 * What `checkIndexes` found in one stored index (Redis: the embedded stores build theirs in
 * memory at each start, so theirs cannot go stale). `stale`: entries whose record is gone;
 * `wrong`: entries whose value is not their record's; `missing`: records without an entry.
 * `repaired`: how many of those a repair fixed (0 when only checking).
 */
export interface IndexCheck {
  collection: string;
  index: string;
  /** False when the stored definition lacks the index: no server of this version has started on it yet. */
  built: boolean;
  entries: number;
  records: number;
  stale: number;
  wrong: number;
  missing: number;
  repaired: number;
}

/** The store: a set of collections with one durability domain. */
export interface Store {
  /** Signals to the other processes sharing the store (Redis); undefined for single-process stores. */
  readonly signals?: StoreSignals;
  /** Cluster-wide limit windows (Redis); undefined for the embedded single-process stores. */
  readonly windows?: SharedWindows;
  /** 'memory' for tests, 'file' for the embedded default, 'redis' with REDIS_URL. */
  readonly kind: string;
  /**
   * The collection for a definition. The same name always yields the same collection;
   * a second definition with another key or other indexes throws. Its methods wait while it
   * loads (see preload).
   */
  collection<T extends object>(def: CollectionDef<T>): Collection<T>;
  /**
   * Loads and indexes these collections, never holding the event loop for more than a slice
   * of a few ms; resolves when all are ready. Throws CORRUPT when a data file does not parse.
   */
  preload(defs: readonly AnyCollectionDef[]): Promise<void>;
  /** False while any collection is loading (readiness: answer 503 until it is true). */
  readonly ready: boolean;
  /** Whether writes can be made durable now (a failing disk makes them fail with UNAVAILABLE). */
  health(): StoreHealth;
  /**
   * Every collection the store holds (defined here or found in storage), in name order.
   * `known`: definitions for collections whose storage does not say their key.
   */
  listCollections(known?: readonly AnyCollectionDef[]): Promise<CollectionInfo[]>;
  /** Up to `limit` records of a collection with ids after `after`, in id order (export). */
  scan(name: string, opts: { after?: string; limit: number }): Promise<ScannedRecord[]>;
  /**
   * Inserts or replaces records (import). The collection need not be defined in this process:
   * `def` gives its key (and segment size) when the store does not hold it yet.
   */
  putMany(def: AnyCollectionDef, records: readonly object[], opts?: WriteOptions): Promise<void>;
  /** Resolves when every change so far (lazy ones included) is on disk. */
  flush(): Promise<void>;
  /** Flushes, releases the data dir, and refuses further calls. Idempotent. */
  close(): Promise<void>;
  /**
   * Checks, and with `repair` fixes, the stored indexes of these collections against their
   * records (a store whose indexes live on between starts: Redis). Safe while servers run.
   */
  checkIndexes?(defs: readonly AnyCollectionDef[], opts: { repair: boolean; onProgress?: (c: IndexCheck) => void }): Promise<IndexCheck[]>;
}

const NAME = /^[a-z][a-z0-9_]{0,39}$/;

/** Declares a collection (checks its name; identity otherwise). */
export function defineCollection<T extends object>(def: CollectionDef<T>): CollectionDef<T> {
  checkCollectionDef(def);
  return def;
}

/** Checks any definition (e.g. one read from an export); throws on a bad name or segment size. */
export function checkCollectionDef<D extends AnyCollectionDef>(def: D): D {
  if (typeof def.name !== 'string' || !NAME.test(def.name)) throw new Error(`Collection name must match ${NAME}: "${def.name}"`);
  if (typeof def.key !== 'string' || def.key === '') throw new Error(`The key of ${def.name} must be a field name`);
  if (def.segmentSize !== undefined && (!Number.isInteger(def.segmentSize) || def.segmentSize < 1)) {
    throw new Error(`segmentSize of ${def.name} must be a positive integer`);
  }
  return def;
}

/**
 * LOCKED: another process owns the data dir. CORRUPT: a data file does not parse. CLOSED: the
 * store was closed. BAD_RECORD: a record or query the store cannot take. UNAVAILABLE: the write
 * could not be made durable (storage failing); it did not happen — retry later.
 */
export type StoreErrorCode = 'LOCKED' | 'CORRUPT' | 'CLOSED' | 'BAD_RECORD' | 'UNAVAILABLE';

/**
 * The `Retry-After` (seconds) of every 503 STORAGE_UNAVAILABLE: a store that failed retries by
 * itself every second (the file store's probe, Redis's reconnect), so a few seconds cover most
 * outages without a client hammering a failing instance.
 */
export const STORE_RETRY_AFTER_SECONDS = 5;

/** A store failure with a stable code; the message is meant for an operator. */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
