import { Slicer } from './bulk.js';
import { EngineCollection, prepare, type Change, type TableHost } from './collection.js';
import { buildIndexes, buildOrdered, loadTable, type SegmentSource } from './loader.js';
import { Committer, type Persister } from './committer.js';
import { journalKey, readJournal } from './journal.js';
import { Table } from './table.js';
import { TurnBudget } from './turn-budget.js';
import { sameDef } from '../records.js';
import {
  checkCollectionDef,
  StoreError,
  type Collection,
  type AnyCollectionDef,
  type CollectionDef,
  type CollectionInfo,
  type Durability,
  type ScannedRecord,
  type Store,
  type StoreHealth,
  type WriteOptions,
} from '../types.js';


export interface EngineOptions {
  kind: string;
  persister?: Persister;
  /** Collections found on disk, with the source of their records. */
  sources?: Map<string, { header: { key?: string; segmentSize?: number }; source: SegmentSource }>;
  onFlushError?: (err: unknown) => void;
  onRecovered?: () => void;
  /** A fold's journal files could not be removed (they stay; the next fold tries again). */
  onJournalDropError?: (collection: string, err: unknown) => void;
  /** Called once the store is closed (after the last flush), e.g. to release a lock. */
  onClose?: () => Promise<void>;
  /** Journal files found, by collection: generations ascending and their paths (see ./journal.ts). */
  journals?: Map<string, { gens: number[]; files: string[] }>;
  /** A replay skipped whole lines of a journal file that are not changes (damage or a hand edit). */
  onJournalSkipped?: (file: string, lines: number) => void;
  /** Called for each table after the last flush of a clean close (the file store's load checkpoint). */
  checkpoint?: (table: Table) => Promise<void>;
}

/**
 * The store engine: every collection lives in memory (see Table), loaded in slices; changes
 * reach the persister by group commit (see Committer) and become visible to readers only once
 * durable.
 */
export class Engine implements Store, TableHost {
  readonly kind: string;
  readonly #tables = new Map<string, Table>();
  readonly #collections = new Map<string, Collection<object>>();
  readonly #sources: NonNullable<EngineOptions['sources']>;
  readonly #committer: Committer;
  /** Loads run one after another, each in slices. */
  #queue: Promise<void> = Promise.resolve();
  #jobs = 0;
  /** A load failed (CORRUPT): the store never becomes ready. */
  #failed = false;
  #closing: Promise<void> | null = null;
  /** Stops loads in progress when the store closes. */
  readonly #stop = new AbortController();
  #closed = false;
  readonly #opts: EngineOptions;
  /** Bounds the lazy writes of one turn (see TurnBudget). */
  readonly turnBudget = new TurnBudget();

  constructor(opts: EngineOptions) {
    this.kind = opts.kind;
    this.#sources = opts.sources ?? new Map();
    this.#opts = opts;
    this.#committer = new Committer(opts.persister, { onFlushError: opts.onFlushError, onRecovered: opts.onRecovered, onJournalDropError: opts.onJournalDropError }, this.turnBudget);
  }

  get ready(): boolean {
    return this.#jobs === 0 && !this.#failed;
  }

  health(): StoreHealth {
    return this.#committer.health;
  }

  collection<T extends object>(def: CollectionDef<T>): Collection<T> {
    const d = def as unknown as AnyCollectionDef;
    const existing = this.#tables.get(def.name);
    if (existing && !existing.raw) {
      // The hot path: a tool asks for its collection on every call, with the same definition object.
      if (existing.def === d) return this.#collections.get(def.name) as unknown as Collection<T>;
      if (!sameDef(existing.def, d)) throw new Error(`Collection "${def.name}" was already defined with another key or indexes`);
      return this.#collections.get(def.name) as unknown as Collection<T>;
    }
    let table: Table;
    if (existing) {
      // Opened by name for an export or import; now its definition is known: build its indexes.
      if (existing.def.key !== d.key) throw new Error(`Collection "${def.name}" holds records keyed by "${existing.def.key}", not "${d.key}"`);
      table = existing;
      table.def = d;
      table.raw = false;
      const fields = d.indexes ?? [];
      // Its methods wait while this runs; changes in flight settle first, so none lands mid-build.
      this.#schedule(table, async (slicer) => {
        await this.#committer.barrier();
        await buildIndexes(table, fields, slicer);
      });
    } else table = this.#open(d, false);
    const coll = new EngineCollection<T>(this, table);
    this.#collections.set(def.name, coll as unknown as Collection<object>);
    return coll;
  }

  #open(def: AnyCollectionDef, raw: boolean): Table {
    const table = new Table(def, raw);
    this.#tables.set(def.name, table);
    const found = this.#sources.get(def.name);
    const journal = this.#opts.journals?.get(def.name);
    if (found || journal) {
      this.#schedule(table, async (slicer) => {
        if (found) await loadTable(table, found.source, slicer, (seg) => this.#committer.markDirty(table, seg));
        if (journal) await this.#replay(table, journal, slicer);
      });
    }
    return table;
  }

  /** Applies a table's journal files over its segments (a start-up after a crash), in order. */
  async #replay(table: Table, journal: { gens: number[]; files: string[] }, slicer: Slicer): Promise<void> {
    const ids = new Map<string, number>();
    for (let i = 0; i < journal.files.length; i++) {
      let skipped = 0;
      for (const [id, json, rec] of readJournal(journal.files[i]!, () => skipped++)) {
        table.set(id, json, rec, undefined);
        ids.set(id, journal.gens[i]!);
        await slicer.maybePause();
      }
      if (skipped > 0) this.#opts.onJournalSkipped?.(journal.files[i]!, skipped);
    }
    this.#committer.seedJournal(table, journal.gens, ids);
  }

  #schedule(table: Table, job: (slicer: Slicer) => Promise<void>): void {
    this.#jobs++;
    const run = this.#queue.then(() => job(new Slicer(8, this.#stop.signal)));
    this.#queue = run.catch(() => {});
    const loading: Promise<void> = run.then(
      () => {
        if (table.loading === loading) table.loading = undefined;
      },
      (err: unknown) => {
        table.failed = err;
        this.#failed = true;
        if (table.loading === loading) table.loading = undefined;
        throw err;
      },
    );
    loading.catch(() => {}).finally(() => this.#jobs--);
    table.loading = loading;
  }

  async preload(defs: readonly AnyCollectionDef[]): Promise<void> {
    this.assertOpen();
    const tables = defs.map((d) => {
      this.collection(d as CollectionDef<object>);
      return this.#tables.get(d.name)!;
    });
    for (const t of tables) await this.whenReady(t);
  }

  assertOpen(): void {
    if (this.#closed || this.#closing) throw new StoreError('CLOSED', 'The store is closed');
  }

  async whenReady(table: Table): Promise<void> {
    while (table.loading) await table.loading;
    if (table.failed !== undefined) throw table.failed;
  }

  async ordered(table: Table): Promise<void> {
    if (table.ordered) return;
    table.building ??= buildOrdered(table, new Slicer()).finally(() => (table.building = undefined));
    await table.building;
  }

  latest(table: Table, id: string): string | undefined {
    const p = table.pending.get(id);
    return p ? p.json : table.json(id);
  }

  write(table: Table, change: Change, durability: Durability): Promise<void> {
    const done = this.#committer.write(table, change.id, change.json, change.rec, durability);
    return durability === 'lazy' ? (this.turnBudget.spend() ?? done) : done;
  }

  barrier(): Promise<void> {
    return this.#committer.barrier();
  }

  journal(table: Table, change: Change, sameKeys = false): Promise<void> {
    const done = this.#committer.journalWrite(table, change.id, change.json, change.rec, sameKeys);
    return this.turnBudget.spend() ?? done;
  }

  /**
   * A table by name. One not defined in this process is opened raw (no indexes), from what its
   * files' headers say, or from `def` (an import into an empty store).
   */
  async #named(name: string, def?: AnyCollectionDef): Promise<Table> {
    this.assertOpen();
    let table = this.#tables.get(name);
    if (!table) {
      const header = this.#sources.get(name)?.header;
      const journal = this.#opts.journals?.get(name);
      const key = header?.key ?? def?.key ?? (journal && journalKey(journal.files));
      if (!key) {
        throw new StoreError('BAD_RECORD', `Collection "${name}": its files do not name their id field; open it with its definition first (store.collection(def))`);
      }
      const segmentSize = header?.segmentSize ?? def?.segmentSize;
      table = this.#open(checkCollectionDef({ name, key, ...(segmentSize ? { segmentSize } : {}) }), true);
    }
    await this.whenReady(table);
    return table;
  }

  async listCollections(known: readonly AnyCollectionDef[] = []): Promise<CollectionInfo[]> {
    // A collection may have journal files only (its records all written as lines since it began).
    const names = [...new Set([...this.#tables.keys(), ...this.#sources.keys(), ...(this.#opts.journals?.keys() ?? [])])].sort();
    const out: CollectionInfo[] = [];
    for (const name of names) {
      const t = await this.#named(name, known.find((d) => d.name === name));
      out.push({ def: { ...t.def, segmentSize: t.segmentSize }, count: t.size });
    }
    return out;
  }

  async scan(name: string, opts: { after?: string; limit: number }): Promise<ScannedRecord[]> {
    const table = await this.#named(name);
    await this.ordered(table);
    return table.idsAfter(opts.after, opts.limit).map((id) => ({ id, json: table.json(id)! }));
  }

  async putMany(def: AnyCollectionDef, records: readonly object[], opts?: WriteOptions): Promise<void> {
    const table = await this.#named(def.name, def);
    if (table.def.key !== def.key) throw new StoreError('BAD_RECORD', `Collection "${def.name}" is keyed by "${table.def.key}", not "${def.key}"`);
    const changes = records.map((r) => prepare(table, r));
    await this.#committer.writeMany(table, changes, opts?.durability ?? 'durable');
  }

  async flush(): Promise<void> {
    await this.#committer.flush();
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        this.#stop.abort(new StoreError('CLOSED', 'The store is closed'));
        await this.#queue;
        await this.#committer.close();
        // An optimisation only: a failure leaves the next start-up to read every record.
        for (const table of this.#tables.values()) await this.#opts.checkpoint?.(table).catch(() => {});
      } finally {
        this.#closed = true;
        await this.#opts.onClose?.();
      }
    })();
    return this.#closing;
  }
}
