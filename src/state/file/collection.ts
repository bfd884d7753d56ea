import { deepEqual, recordId, recordJson, type Rec } from '../records.js';
import type { AnyQuery, Table } from './table.js';
import { addEach, addOnce, applyDeltas, applyMax, checkCaps, checkDeltas, checkMax, FULFILLED } from '../counters.js';
import { REMOVE, StoreError, type AddItem, type AddManyOptions, type AddOptions, type CappedInsert, type Collection, type Durability, type InsertCap, type NumberField, type Query, type Remove, type Updater, type WriteOptions } from '../types.js';

/**
 * A record checked and serialised for the engine: its id, its JSON, and the record parsed
 * back from that JSON (what index keys are computed from) only when the table's indexes need it.
 */
export interface Prepared {
  id: string;
  json: string;
  rec: Rec | undefined;
}

/** A change a writer hands the engine: a record to store, or an id to delete (json undefined). */
export type Change = Prepared | { id: string; json: undefined; rec: undefined };

/**
 * Checks a record and serialises it; throws BAD_RECORD for what cannot be stored. Parses the
 * JSON back only when something needs it: not for a table without indexes given a plain object
 * (its key field then serialises as it is). Saves a parse per click counted.
 */
export function prepare(table: Table, record: unknown): Prepared {
  const json = recordJson(table.def.name, record);
  const plain = table.indexes.size === 0 && Object.getPrototypeOf(record) === Object.prototype && !('toJSON' in (record as object));
  if (plain) return { id: recordId(table.def, record as Rec), json, rec: undefined };
  const rec = JSON.parse(json) as Rec;
  return { id: recordId(table.def, rec), json, rec };
}

/** What a collection needs from the engine that owns its table. */
export interface TableHost {
  assertOpen(): void;
  /** Resolves once the table is loaded (throws CORRUPT when it could not be). */
  whenReady(table: Table): Promise<void>;
  /** Builds the table's id-ordered tree if it has none yet. */
  ordered(table: Table): Promise<void>;
  /** The version writers build on: the latest change, durable or not. */
  latest(table: Table, id: string): string | undefined;
  /** Records a change; resolves when it is durable (at once when lazy). */
  write(table: Table, change: Change, durability: Durability): Promise<void>;
  /** Resolves when every change not yet durable has been written or rolled back. */
  barrier(): Promise<void>;
  /** Applies a lazy change at once and persists it in the table's journal (file store); `sameKeys`: see Table.set. */
  journal?(table: Table, change: Prepared, sameKeys?: boolean): Promise<void>;
}

const parse = (json: string | undefined) => (json === undefined ? undefined : (JSON.parse(json) as Rec));

const durability = (opts: WriteOptions | undefined): Durability => opts?.durability ?? 'durable';

/**
 * The Collection a tool sees. Readers see committed (durable, or lazy) records only; writers
 * build on the latest version, so concurrent read-modify-writes of one record serialise. When
 * a writer's answer would rest on a change that is not yet durable (an insert finding the id
 * taken by a write in flight, an update leaving it unchanged), it waits for that change to
 * settle and decides again, so a change that then fails is never reported as if it existed.
 */
export class EngineCollection<T extends object> implements Collection<T> {
  readonly name: string;
  readonly #host: TableHost;
  readonly #table: Table;
  readonly #caps = new CapRanges();

  constructor(host: TableHost, table: Table) {
    this.name = table.def.name;
    this.#host = host;
    this.#table = table;
  }

  /** Throws CLOSED; waits while the table loads (throws CORRUPT when it could not). */
  async #ready(): Promise<void> {
    this.#host.assertOpen();
    const table = this.#table;
    if (table.loading !== undefined || table.failed !== undefined) await this.#host.whenReady(table);
  }

  #checkId(id: unknown): void {
    if (typeof id !== 'string') throw new StoreError('BAD_RECORD', `${this.name}: an id must be a string`);
  }

  #write(change: Change, opts: WriteOptions | undefined): Promise<void> {
    return this.#host.write(this.#table, change, durability(opts));
  }

  #remove(id: string, opts: WriteOptions | undefined): Promise<void> {
    return this.#write({ id, json: undefined, rec: undefined }, opts);
  }

  /** A change to `id` is in flight (not durable yet): an answer resting on it must wait for it. */
  #pending(id: string): boolean {
    return this.#table.pending.has(id);
  }

  /** Prepares a record that replaces `id`; throws BAD_RECORD when it would change the id. */
  #replacing(id: string, record: unknown, method: string): Prepared {
    const n = prepare(this.#table, record);
    if (n.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: ${method} may not change the id`);
    return n;
  }

  async get(id: string): Promise<T | undefined> {
    await this.#ready();
    this.#checkId(id);
    return parse(this.#table.json(id)) as T | undefined;
  }

  async getMany(ids: readonly string[]): Promise<(T | undefined)[]> {
    await this.#ready();
    for (const id of ids) this.#checkId(id);
    return ids.map((id) => parse(this.#table.json(id)) as T | undefined);
  }

  async put(record: T, opts?: WriteOptions): Promise<void> {
    await this.#ready();
    await this.#write(prepare(this.#table, record), opts);
  }

  async insert(record: T, opts?: WriteOptions): Promise<boolean> {
    await this.#ready();
    const n = prepare(this.#table, record);
    while (this.#host.latest(this.#table, n.id) !== undefined) {
      if (!this.#pending(n.id)) return false;
      await this.#host.barrier();
    }
    await this.#write(n, opts);
    return true;
  }

  async insertCapped(record: T, cap: InsertCap<T>, opts?: WriteOptions): Promise<CappedInsert> {
    await this.#ready();
    const n = prepare(this.#table, record);
    const range = { ...cap.within, where: undefined } as AnyQuery;
    const key = JSON.stringify(cap.within);
    const decided = await this.#caps.decide(key, () => this.#decideCapped(n, range, key, cap.max, opts));
    return decided.outcome;
  }

  /**
   * One capped insert's decision, with none other for its range in between: full, taken, or
   * registered (its outcome then settles once the insert is durable, or fails).
   */
  async #decideCapped(n: Prepared, range: AnyQuery, key: string, max: number, opts: WriteOptions | undefined): Promise<Decided> {
    const table = this.#table;
    let used = table.count(range) + this.#caps.inflight(key);
    // Changes in flight may move records out of the range, and a settled insert is counted
    // twice until its bookkeeping runs: let them settle before refusing.
    if (used >= max && (table.pending.size > 0 || this.#caps.inflight(key) > 0)) {
      await this.#host.barrier();
      await new Promise((r) => setImmediate(r));
      used = table.count(range) + this.#caps.inflight(key);
    }
    if (used >= max) return { outcome: Promise.resolve('full') };
    while (this.#host.latest(table, n.id) !== undefined) {
      if (!this.#pending(n.id)) return { outcome: Promise.resolve('taken') };
      await this.#host.barrier();
    }
    return { outcome: this.#caps.inserting(key, () => this.#write(n, opts)) };
  }

  async delete(id: string, opts?: WriteOptions): Promise<boolean> {
    await this.#ready();
    this.#checkId(id);
    while (this.#host.latest(this.#table, id) === undefined) {
      if (!this.#pending(id)) return false;
      await this.#host.barrier();
    }
    await this.#remove(id, opts);
    return true;
  }

  async update(id: string, fn: Updater<T>, opts?: WriteOptions): Promise<T | undefined> {
    await this.#ready();
    this.#checkId(id);
    for (;;) {
      const cur = this.#host.latest(this.#table, id);
      const out = fn(parse(cur) as T | undefined);
      if (out === undefined) {
        if (this.#pending(id)) {
          await this.#host.barrier();
          continue;
        }
        return parse(cur) as T | undefined;
      }
      if (out === REMOVE) {
        if (cur !== undefined) await this.#remove(id, opts);
        return undefined;
      }
      const n = this.#replacing(id, out, 'update');
      await this.#writeReplaced(n, opts);
      return parse(n.json) as T;
    }
  }

  async compareAndSet(id: string, expected: T | undefined, next: T | Remove, opts?: WriteOptions): Promise<boolean> {
    await this.#ready();
    this.#checkId(id);
    const want = expected === undefined ? undefined : parse(JSON.stringify(expected));
    for (;;) {
      const cur = this.#host.latest(this.#table, id);
      if (!deepEqual(parse(cur), want)) {
        if (!this.#pending(id)) return false;
        await this.#host.barrier();
        continue;
      }
      if (next === REMOVE) {
        if (cur !== undefined) await this.#remove(id, opts);
        return true;
      }
      await this.#write(this.#replacing(id, next, 'compareAndSet'), opts);
      return true;
    }
  }

  async increment(id: string, field: NumberField<T>, by: number, opts: { init: T; set?: Partial<T> } & WriteOptions): Promise<T> {
    await this.#ready();
    this.#checkId(id);
    if (!Number.isFinite(by)) throw new StoreError('BAD_RECORD', `${this.name}: increment must be a finite number`);
    const cur = this.#host.latest(this.#table, id);
    const current = JSON.parse(cur ?? prepare(this.#table, opts.init).json) as Rec;
    const base = current[field];
    const n = this.#replacing(id, { ...current, ...opts.set, [field]: (typeof base === 'number' ? base : 0) + by }, 'increment');
    await this.#writeReplaced(n, opts);
    return JSON.parse(n.json) as T;
  }

  /**
   * Writes a replaced record (increment, update). Lazy changes of a table past one segment go to
   * the journal: spread over its records (the clicks' roll-up, counters), each flush would
   * otherwise rewrite every segment holding one of them. A table of one segment rewrites one
   * file either way.
   */
  async #writeReplaced(n: Prepared, opts: WriteOptions | undefined): Promise<void> {
    if (durability(opts) === 'lazy' && this.#host.journal && this.#table.segs.length > 1) await this.#host.journal(this.#table, n);
    else await this.#write(n, opts);
  }

  async add(id: string, deltas: Readonly<Record<string, number>>, opts: AddOptions<T>): Promise<void> {
    await this.#ready();
    const n = this.#added(id, deltas, opts, checkCaps(this.name, opts.caps));
    // Lazy adds go to the journal, not through their segment's rewrite (./journal.ts).
    if (durability(opts) === 'lazy' && this.#host.journal) await this.#host.journal(this.#table, n, n.sameKeys);
    else await this.#write(n, opts);
  }

  /**
   * An add applied to the latest version of `id`, ready to write: the record, and whether its
   * indexed fields are as they were (a record whose indexed fields the deltas left alone keeps
   * its index keys as they are). Synchronous; throws BAD_RECORD.
   */
  #added(id: string, deltas: Readonly<Record<string, number>>, opts: Pick<AddOptions<T>, 'init' | 'max'>, caps: ReturnType<typeof checkCaps>): Prepared & { sameKeys: boolean } {
    this.#checkId(id);
    const pairs = checkDeltas(this.name, this.#table.def.key, opts.init as Rec, deltas);
    const maxima = checkMax(this.name, this.#table.def.key, opts.init as Rec, opts.max, pairs);
    if ((opts.init as Rec)[this.#table.def.key] !== id) throw new StoreError('BAD_RECORD', `${this.name}: add's init must have the id`);
    const latest = this.#host.latest(this.#table, id);
    let rec: Rec;
    if (latest !== undefined) rec = JSON.parse(latest) as Rec;
    else {
      const init = prepare(this.#table, opts.init);
      if (init.id !== id) throw new StoreError('BAD_RECORD', `${this.name}: add's init must have the id`);
      // prepare's parse is a fresh copy, ours to change (a table without indexes has none).
      rec = init.rec ?? (JSON.parse(init.json) as Rec);
    }
    const indexes = this.#table.indexes;
    const fields = latest === undefined || indexes.size === 0 ? undefined : [...indexes.keys()];
    const before = fields?.map((f) => rec[f]);
    applyDeltas(rec, pairs, caps);
    applyMax(rec, maxima);
    // rec came from JSON and gained numbers only: its text is the record, itself the parsed form.
    const sameKeys = latest !== undefined && (fields === undefined || fields.every((f, i) => rec[f] === before![i]));
    return { id, json: recordJson(this.name, rec), rec, sameKeys };
  }

  /**
   * Lazy adds with a journal (what visit counts are): each item applied in turn, synchronously,
   * in one loop — its own outcome, as one `add` each would give, without a promise per item.
   * Anything else: one `add` per item (addEach).
   */
  addMany(items: readonly AddItem<T>[], opts: AddManyOptions = {}): Promise<PromiseSettledResult<void>[]> {
    const journal = this.#host.journal?.bind(this.#host);
    if (durability(opts) !== 'lazy' || !journal) return addEach(this, this.#table.def, items, opts);
    return addOnce(this, this.#table.def, items, opts, async ({ caps = [] }) => {
      try {
        await this.#ready();
      } catch (err) {
        return items.map(() => ({ status: 'rejected', reason: err }));
      }
      const out: PromiseSettledResult<void>[] = [];
      let last: Promise<void> | undefined;
      for (const it of items) {
        try {
          const n = this.#added(it.id, it.deltas, it, caps);
          last = journal(this.#table, n, n.sameKeys);
          out.push(FULFILLED);
        } catch (err) {
          out.push({ status: 'rejected', reason: err });
        }
      }
      // A journal write resolves at once, or on a later turn once this turn's budget is spent
      // (TurnBudget): the last one resolves last.
      if (last) await last;
      return out;
    });
  }

  async query(q: Query<T> = {}): Promise<T[]> {
    await this.#ready();
    if (q.index === undefined) await this.#host.ordered(this.#table);
    return this.#table.select(q as AnyQuery).map((id) => JSON.parse(this.#table.json(id)!) as T);
  }

  async count(q: Query<T> = {}): Promise<number> {
    await this.#ready();
    if (q.index === undefined && q.where !== undefined) await this.#host.ordered(this.#table);
    return this.#table.count(q as AnyQuery);
  }
}

/**
 * A capped insert's decision. The outcome is wrapped so that the queue of decisions moves on
 * once the insert is registered, without waiting for it to be durable.
 */
interface Decided {
  outcome: Promise<CappedInsert>;
}

/**
 * insertCapped calls per cap range, one decision at a time: count, then register the insert,
 * with nothing in between. The decision does not wait for the insert to be durable (so capped
 * inserts share group commits): inserts decided but not yet durable are counted in `inflight`
 * until they settle.
 */
class CapRanges {
  readonly #chains = new Map<string, Promise<unknown>>();
  readonly #inflight = new Map<string, number>();

  /** Inserts decided in range `key`, not durable yet. */
  inflight(key: string): number {
    return this.#inflight.get(key) ?? 0;
  }

  /** Runs `decide` once every decision queued before it for range `key` has run. */
  decide(key: string, decide: () => Promise<Decided>): Promise<Decided> {
    const run = (this.#chains.get(key) ?? Promise.resolve()).then(decide);
    const settled = run.then(
      () => {},
      () => {},
    );
    this.#chains.set(key, settled);
    void settled.then(() => {
      if (this.#chains.get(key) === settled) this.#chains.delete(key);
    });
    return run;
  }

  /** Counts an insert in range `key` from now until `write`'s promise settles. */
  inserting(key: string, write: () => Promise<void>): Promise<CappedInsert> {
    this.#inflight.set(key, this.inflight(key) + 1);
    let written: Promise<void>;
    try {
      written = write();
    } catch (err) {
      this.#settle(key);
      throw err;
    }
    return written.then(() => 'inserted' as const).finally(() => this.#settle(key));
  }

  #settle(key: string): void {
    const left = this.inflight(key) - 1;
    if (left > 0) this.#inflight.set(key, left);
    else this.#inflight.delete(key);
  }
}
