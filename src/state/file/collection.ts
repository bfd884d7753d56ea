import { deepEqual, recordId, recordJson, type Rec } from '../records.js';
import type { AnyQuery, Table } from './table.js';
import { REMOVE, StoreError, type CappedInsert, type Collection, type Durability, type NumberField, type Query, type Remove, type Updater } from '../types.js';

/** A record checked and serialised for storage. */
export interface Normalised {
  id: string;
  json: string;
  /** The record as stored (parsed back from `json`): what index keys are computed from. */
  rec: Rec;
}

/** A record ready for the file/memory engine: `rec` only when the table's indexes need it. */
export type Prepared = Omit<Normalised, 'rec'> & { rec: Rec | undefined };

/** Checks a record and serialises it; throws BAD_RECORD for what cannot be stored. */
export function normalise(table: Table, record: unknown): Normalised {
  const n = prepare(table, record);
  return n.rec ? (n as Normalised) : { ...n, rec: JSON.parse(n.json) as Rec };
}

/**
 * normalise without the second parse when nothing needs it: a table without indexes, and a
 * plain object (its key field then serialises as it is). Saves a parse per click counted.
 */
export function prepare(table: Table, record: unknown): Prepared {
  const json = recordJson(table.def.name, record);
  const plain = table.indexes.size === 0 && Object.getPrototypeOf(record) === Object.prototype && !('toJSON' in (record as object));
  if (plain) return { id: checkedId(table, record as Rec), json, rec: undefined };
  const rec = JSON.parse(json) as Rec;
  return { id: checkedId(table, rec), json, rec };
}

/** The id of a parsed record; throws BAD_RECORD when its key field is not a usable id. */
export function checkedId(table: Table, rec: Rec): string {
  return recordId(table.def, rec);
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
  write(table: Table, change: Prepared | { id: string; json: undefined; rec: undefined }, durability: Durability): Promise<void>;
  /** Resolves when every change not yet durable has been written or rolled back. */
  barrier(): Promise<void>;
}

const parse = (json: string | undefined) => (json === undefined ? undefined : (JSON.parse(json) as Rec));

/**
 * The Collection a tool sees. Readers see committed (durable, or lazy) records only; writers
 * build on the latest version, so concurrent read-modify-writes of one record serialise. When
 * a writer's answer would rest on a change that is not yet durable (an insert finding the id
 * taken by a write in flight, an update leaving it unchanged), it waits for that change to
 * settle and decides again, so a change that then fails is never reported as if it existed.
 */
export function makeCollection<T extends object>(host: TableHost, table: Table): Collection<T> {
  const name = table.def.name;
  const ready = async () => {
    host.assertOpen();
    if (table.loading !== undefined || table.failed !== undefined) await host.whenReady(table);
  };
  const checkId = (id: unknown) => {
    if (typeof id !== 'string') throw new StoreError('BAD_RECORD', `${name}: an id must be a string`);
  };
  const durability = (opts?: { durability?: Durability }) => opts?.durability ?? 'durable';
  const remove = (id: string) => ({ id, json: undefined, rec: undefined });
  const pending = (id: string) => table.pending.has(id);
  /**
   * insertCapped calls per cap range, one decision at a time: count, then register the insert,
   * with nothing in between. The decision does not wait for the insert to be durable (so capped
   * inserts share group commits): inserts decided but not yet durable are counted in
   * `capInflight` until they settle.
   */
  const capChains = new Map<string, Promise<unknown>>();
  const capInflight = new Map<string, number>();
  const inflight = (key: string) => capInflight.get(key) ?? 0;

  return {
    name,
    async get(id) {
      await ready();
      checkId(id);
      return parse(table.json(id)) as T | undefined;
    },
    async put(record, opts) {
      await ready();
      await host.write(table, prepare(table, record), durability(opts));
    },
    async insert(record, opts) {
      await ready();
      const n = prepare(table, record);
      while (host.latest(table, n.id) !== undefined) {
        if (!pending(n.id)) return false;
        await host.barrier();
      }
      await host.write(table, n, durability(opts));
      return true;
    },
    async insertCapped(record, cap, opts) {
      await ready();
      const n = prepare(table, record);
      const q = { ...cap.within, where: undefined } as AnyQuery;
      const key = JSON.stringify(cap.within);
      const decide = async (): Promise<{ outcome: Promise<CappedInsert> }> => {
        let used = table.count(q) + inflight(key);
        // Changes in flight may move records out of the range, and a settled insert is counted
        // twice until its bookkeeping runs: let them settle before refusing.
        if (used >= cap.max && (table.pending.size > 0 || inflight(key) > 0)) {
          await host.barrier();
          await new Promise((r) => setImmediate(r));
          used = table.count(q) + inflight(key);
        }
        if (used >= cap.max) return { outcome: Promise.resolve('full') };
        while (host.latest(table, n.id) !== undefined) {
          if (!pending(n.id)) return { outcome: Promise.resolve('taken') };
          await host.barrier();
        }
        capInflight.set(key, inflight(key) + 1);
        const settle = () => {
          const left = inflight(key) - 1;
          if (left > 0) capInflight.set(key, left);
          else capInflight.delete(key);
        };
        let written: Promise<void>;
        try {
          written = host.write(table, n, durability(opts));
        } catch (err) {
          settle();
          throw err;
        }
        return { outcome: written.then(() => 'inserted' as const).finally(settle) };
      };
      const run = (capChains.get(key) ?? Promise.resolve()).then(decide);
      const settled = run.then(
        () => {},
        () => {},
      );
      capChains.set(key, settled);
      void settled.then(() => {
        if (capChains.get(key) === settled) capChains.delete(key);
      });
      return (await run).outcome;
    },
    async delete(id, opts) {
      await ready();
      checkId(id);
      while (host.latest(table, id) === undefined) {
        if (!pending(id)) return false;
        await host.barrier();
      }
      await host.write(table, remove(id), durability(opts));
      return true;
    },
    async update(id, fn: Updater<T>, opts) {
      await ready();
      checkId(id);
      for (;;) {
        const cur = host.latest(table, id);
        const out = fn(parse(cur) as T | undefined);
        if (out === undefined) {
          if (pending(id)) {
            await host.barrier();
            continue;
          }
          return parse(cur) as T | undefined;
        }
        if (out === REMOVE) {
          if (cur !== undefined) await host.write(table, remove(id), durability(opts));
          return undefined;
        }
        const n = prepare(table, out);
        if (n.id !== id) throw new StoreError('BAD_RECORD', `${name}: update may not change the id`);
        await host.write(table, n, durability(opts));
        return parse(n.json) as T;
      }
    },
    async compareAndSet(id, expected, next: T | Remove, opts) {
      await ready();
      checkId(id);
      const want = expected === undefined ? undefined : parse(JSON.stringify(expected));
      for (;;) {
        const cur = host.latest(table, id);
        if (!deepEqual(parse(cur), want)) {
          if (!pending(id)) return false;
          await host.barrier();
          continue;
        }
        if (next === REMOVE) {
          if (cur !== undefined) await host.write(table, remove(id), durability(opts));
          return true;
        }
        const n = prepare(table, next);
        if (n.id !== id) throw new StoreError('BAD_RECORD', `${name}: compareAndSet may not change the id`);
        await host.write(table, n, durability(opts));
        return true;
      }
    },
    async increment(id, field: NumberField<T>, by, opts) {
      await ready();
      checkId(id);
      if (!Number.isFinite(by)) throw new StoreError('BAD_RECORD', `${name}: increment must be a finite number`);
      const cur = host.latest(table, id);
      const current = JSON.parse(cur ?? prepare(table, opts.init).json) as Rec;
      const base = current[field];
      const n = prepare(table, { ...current, ...opts.set, [field]: (typeof base === 'number' ? base : 0) + by });
      if (n.id !== id) throw new StoreError('BAD_RECORD', `${name}: increment may not change the id`);
      await host.write(table, n, durability(opts));
      return JSON.parse(n.json) as T;
    },
    async query(q: Query<T> = {}) {
      await ready();
      if (q.index === undefined) await host.ordered(table);
      return table.select(q as AnyQuery).map((id) => JSON.parse(table.json(id)!) as T);
    },
    async count(q: Query<T> = {}) {
      await ready();
      if (q.index === undefined && q.where !== undefined) await host.ordered(table);
      return table.count(q as AnyQuery);
    },
  };
}
