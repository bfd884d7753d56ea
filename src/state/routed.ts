import type { AnyCollectionDef, CollectionInfo, Store } from './types.js';

/**
 * One store over two: the collections named in `names` live in `other`, every other in `main`
 * (the file store's visit analytics, kept in a store of their own by the analytics thread:
 * docs/shortener.md, "The analytics thread"). Signals, limit windows and index checks are the
 * main store's; an export lists both (a collection of `names` only from `other`); `close`
 * closes `other` first, then `main`.
 */
export function routedStore(main: Store, other: Store, names: ReadonlySet<string>): Store {
  const of = (name: string): Store => (names.has(name) ? other : main);
  const split = (defs: readonly AnyCollectionDef[]) => [defs.filter((d) => !names.has(d.name)), defs.filter((d) => names.has(d.name))] as const;
  const routed: Store = {
    kind: main.kind,
    get ready() {
      return main.ready && other.ready;
    },
    collection: (def) => of(def.name).collection(def),
    preload: async (defs) => {
      const [m, o] = split(defs);
      await Promise.all([main.preload(m), other.preload(o)]);
    },
    health: () => {
      const h = main.health();
      return h.ok ? other.health() : h;
    },
    listCollections: async (known) => {
      const [m, o] = split(known ?? []);
      const [a, b] = await Promise.all([main.listCollections(m), other.listCollections(o)]);
      const all: CollectionInfo[] = [...a.filter((c) => !names.has(c.def.name)), ...b.filter((c) => names.has(c.def.name))];
      return all.sort((x, y) => (x.def.name < y.def.name ? -1 : x.def.name > y.def.name ? 1 : 0));
    },
    scan: (name, opts) => of(name).scan(name, opts),
    putMany: (def, records, opts) => of(def.name).putMany(def, records, opts),
    flush: async () => {
      await Promise.all([main.flush(), other.flush()]);
    },
    close: async () => {
      try {
        await other.close();
      } finally {
        await main.close();
      }
    },
  };
  if (main.signals) Object.assign(routed, { signals: main.signals });
  if (main.windows) Object.assign(routed, { windows: main.windows });
  if (main.checkIndexes) routed.checkIndexes = (defs, opts) => main.checkIndexes!(split(defs)[0], opts);
  parts.set(routed, { main, other, names });
  return routed;
}

/** What each routed store is made of (routedParts). */
const parts = new WeakMap<Store, { main: Store; other: Store; names: ReadonlySet<string> }>();

/** The two stores under a store made by routedStore, and the names routed to `other`; undefined for any other store. */
export function routedParts(store: Store): { main: Store; other: Store; names: ReadonlySet<string> } | undefined {
  return parts.get(store);
}
