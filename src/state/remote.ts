/**
 * A store served to another thread: `storeHandlers` on the side that owns it (the analytics
 * thread's own file store), `remoteStore` on the side that calls it (the main thread, through
 * a routed store: ./routed.ts). Calls cross as messages (src/lib/rpc.ts), their arguments and
 * results structured-cloned; a StoreError keeps its code. What cannot cross is refused:
 * `update` (its updater is a function) and a `compareAndSet` to REMOVE.
 */
import type { RpcPeer } from '../lib/rpc.js';
import { fromWire, toWire } from '../lib/rpc.js';
import {
  REMOVE,
  StoreError,
  type AnyCollectionDef,
  type Collection,
  type CollectionDef,
  type CollectionInfo,
  type ScannedRecord,
  type Store,
  type StoreHealth,
  type WriteOptions,
} from './types.js';

/** The collection methods that cross (all but `update`). */
const METHODS = ['get', 'getMany', 'put', 'insert', 'insertCapped', 'delete', 'compareAndSet', 'increment', 'add', 'addMany', 'query', 'count'] as const;
type Method = (typeof METHODS)[number];

/**
 * The handlers (RpcPeer's) that serve a store and its collections `defs` (by name) to the other
 * thread. `store` gives it at each call (it throws while the store is not open).
 */
export function storeHandlers(store: () => Store, defs: readonly AnyCollectionDef[]): Record<string, (...args: never[]) => unknown> {
  const byName = new Map(defs.map((d) => [d.name, d]));
  const defOf = (name: string): AnyCollectionDef => {
    const def = byName.get(name);
    if (!def) throw new StoreError('BAD_RECORD', `collection ${name} is not served by this thread`);
    return def;
  };
  return {
    'store.col': async (name: string, method: Method, args: unknown[]) => {
      if (!METHODS.includes(method)) throw new Error(`${method} does not cross threads`);
      const c = store().collection(defOf(name) as CollectionDef<object>) as unknown as Record<Method, (...a: unknown[]) => Promise<unknown>>;
      const out = await c[method](...args);
      // addMany's outcomes: an error as it crosses.
      if (method === 'addMany') return (out as PromiseSettledResult<void>[]).map((r) => (r.status === 'fulfilled' ? r : { status: 'rejected', reason: toWire(r.reason) }));
      return out;
    },
    'store.scan': (name: string, opts: { after?: string; limit: number }) => store().scan(defOf(name).name, opts),
    'store.putMany': (name: string, records: object[], opts?: WriteOptions) => store().putMany(defOf(name), records, opts),
    'store.list': async () => (await store().listCollections(defs)).map((c) => ({ name: c.def.name, count: c.count })),
    'store.flush': () => store().flush(),
  };
}

/**
 * The main thread's side of a store served by another thread: a Store whose collections
 * `defs` call it. Its health is what the other side last said (`setHealth`); `close` is
 * the owner's (onClose: the thread is stopped there).
 */
export function remoteStore(rpc: Pick<RpcPeer, 'call'>, kind: string, defs: readonly AnyCollectionDef[], onClose: () => Promise<void>): Store & { setHealth(h: StoreHealth): void } {
  const byName = new Map(defs.map((d) => [d.name, d]));
  const cols = new Map<string, Collection<object>>();
  let health: StoreHealth = { ok: true };
  let closed: Promise<void> | undefined;
  const call = <T>(name: string, method: Method, args: unknown[]): Promise<T> => rpc.call<T>('store.col', name, method, args);
  const collection = <T extends object>(def: CollectionDef<T>): Collection<T> => {
    if (!byName.has(def.name)) throw new StoreError('BAD_RECORD', `collection ${def.name} is not held by this store`);
    let c = cols.get(def.name);
    if (!c) {
      const name = def.name;
      const forward = Object.fromEntries(METHODS.map((m) => [m, (...args: unknown[]) => call(name, m, args)])) as unknown as Collection<object>;
      c = {
        ...forward,
        update: () => Promise.reject(new Error(`${name}.update does not cross threads`)),
        compareAndSet: (id: string, expected: object | undefined, next: object | typeof REMOVE, opts?: WriteOptions) =>
          next === REMOVE ? Promise.reject(new Error(`${name}.compareAndSet to REMOVE does not cross threads`)) : call<boolean>(name, 'compareAndSet', [id, expected, next, opts]),
        addMany: async (items, opts) => {
          const out = await call<({ status: 'fulfilled'; value: undefined } | { status: 'rejected'; reason: Parameters<typeof fromWire>[0] })[]>(name, 'addMany', [items, opts]);
          return out.map((r) => (r.status === 'fulfilled' ? r : { status: 'rejected' as const, reason: fromWire(r.reason) }));
        },
      };
      cols.set(name, c);
    }
    return c as unknown as Collection<T>;
  };
  return {
    kind,
    ready: true,
    collection,
    preload: async () => {},
    health: () => health,
    setHealth: (h) => {
      health = h;
    },
    listCollections: async () => {
      const list = await rpc.call<{ name: string; count: number }[]>('store.list');
      return list.flatMap((c): CollectionInfo[] => {
        const def = byName.get(c.name);
        return def ? [{ def, count: c.count }] : [];
      });
    },
    scan: (name, opts) => rpc.call<ScannedRecord[]>('store.scan', name, opts),
    putMany: (def, records, opts) => rpc.call<void>('store.putMany', def.name, records, opts),
    flush: () => rpc.call<void>('store.flush'),
    close: () => (closed ??= onClose()),
  };
}
