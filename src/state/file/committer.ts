import { Slicer } from './bulk.js';
import type { TurnBudget } from './turn-budget.js';
import type { Prepared } from './collection.js';
import type { Rec } from '../records.js';
import { JOURNAL_FOLD_BYTES, journalLine } from './journal.js';
import type { Pending, Segment, Table } from './table.js';
import { StoreError, type Durability, type StoreHealth } from '../types.js';

/** Lazy writes reach the disk within this many ms (at most 1 s of clicks may be lost). */
export const LAZY_FLUSH_MS = 500;
/** While the disk fails, the store tries again this often (a rewrite of what is dirty, or a probe). */
const RETRY_MS = 1000;

/** The records of one file as the persistence layer sees them. */
export interface SegmentData {
  collection: string;
  segment: number;
  key: string;
  segmentSize: number;
  /** Each record's JSON text. */
  lines: readonly string[];
}

/** A flush that failed; `unsure` names files that may now hold content that was rolled back. */
export class FlushError extends StoreError {
  constructor(
    message: string,
    readonly unsure: ReadonlyArray<{ collection: string; segment: number }>,
    cause: unknown,
  ) {
    super('UNAVAILABLE', message, { cause });
  }
}

/** Where an engine's state goes. The memory store has none. */
export interface Persister {
  /** Writes these segment files; resolves only when all are durable. Throws FlushError. */
  write(segments: SegmentData[]): Promise<void>;
  /** Proves the disk takes a durable write again (after a failure, when nothing is dirty). */
  probe(): Promise<void>;
  /** Appends lines to a collection's journal file of generation `gen` (see ./journal.ts). */
  appendJournal?(collection: string, gen: number, text: string): Promise<void>;
  /** Removes a collection's journal files of these generations up to `upTo`. */
  dropJournal?(collection: string, upTo: number, gens: readonly number[]): Promise<void>;
  close(): Promise<void>;
}

type Waiter = { resolve: () => void; reject: (err: unknown) => void };

/** A table's journal (see ./journal.ts): what its files hold and what is still to append. */
interface JournalState {
  /** The generation appended to. */
  gen: number;
  /** Generations with a file (or about to have one). */
  gens: number[];
  /** Id → the generation of its last line: a record whose latest state is in the journal. */
  ids: Map<string, number>;
  /** Lines for the next flush: id → JSON (undefined: deleted). */
  lines: Map<string, string | undefined>;
  /** Bytes appended since the last fold. */
  bytes: number;
  /** A fold in flight: the generations up to this one go once its segments are written. */
  folding: number | undefined;
  /** A journaled record was deleted: its old lines must leave the disk (fold soon). */
  foldDue: boolean;
  /** When the last fold a delete asked for started (ms). */
  lastDueFold: number;
  /**
   * The last fold's files could not be removed: they stay, harmless (a replay of them ends on
   * each record's latest state), and the next fold tries again; a close does not (forever).
   */
  dropFailed: boolean;
}

/**
 * A delete folds its table's journal at the next flush, but at most this often (ms): the
 * deleted record's old lines stay on disk at most this long (url_delete: analytics gone).
 */
export const DELETE_FOLD_MS = 10_000;

/** The most a journal grows before it is folded (a crash's replay reads it all). */
const JOURNAL_MAX_BYTES = 256 * 1024 * 1024;
/** A record's rough size in a segment file, to scale a journal's fold point with its table. */
const RECORD_BYTES = 300;
const RESOLVED = Promise.resolve();

/**
 * Group commit with clean failure. A durable change waits, invisible to readers, as a Pending
 * entry (writers build on it); one flush at a time writes every file touched since the last
 * one, then applies its changes to the tables and answers its writers together. If the flush
 * fails, every change not yet durable is dropped and its writers get UNAVAILABLE: nobody saw
 * it, and no later flush writes it. Lazy changes apply at once and are written by the next
 * flush (they are kept, and retried, when a flush fails).
 */
export class Committer {
  #gen = 0;
  /** Changes for the next flush, in order. */
  #current: Pending[] = [];
  #waiters: Waiter[] = [];
  /** Segments whose committed content is not on disk yet (lazy changes, repairs). */
  #dirty = new Map<Segment, Table>();
  #flushing: Promise<void> | null = null;
  #scheduled = false;
  #lazyTimer: NodeJS.Timeout | null = null;
  #retryTimer: NodeJS.Timeout | null = null;
  #closing = false;
  /** Closing: every journal is folded into its segments by the last flushes. */
  #foldAll = false;
  readonly #journals = new Map<Table, JournalState>();
  health: StoreHealth = { ok: true };

  constructor(
    readonly persister: Persister | undefined,
    readonly hooks: { onFlushError?: (err: unknown) => void; onRecovered?: () => void; onJournalDropError?: (collection: string, err: unknown) => void } = {},
    /** The turn budget a flush shares with the lazy writes (see TurnBudget). */
    readonly budget?: TurnBudget,
  ) {}

  markDirty(table: Table, seg: Segment): void {
    this.#dirty.set(seg, table);
    this.#scheduleLazy(LAZY_FLUSH_MS);
  }

  /** Records one change; resolves when it is durable (at once when lazy). */
  write(table: Table, id: string, json: string | undefined, rec: Rec | undefined, durability: Durability): Promise<void> {
    this.#stage(table, id, json, rec, durability);
    return durability === 'lazy' || !this.persister ? RESOLVED : this.#wait();
  }

  /** Records many changes; resolves when all are durable. */
  writeMany(table: Table, changes: readonly Prepared[], durability: Durability): Promise<void> {
    for (const c of changes) this.#stage(table, c.id, c.json, c.rec, durability);
    return durability === 'lazy' || !this.persister ? RESOLVED : this.#wait();
  }

  #journal(table: Table): JournalState {
    let st = this.#journals.get(table);
    if (!st) this.#journals.set(table, (st = { gen: 1, gens: [], ids: new Map(), lines: new Map(), bytes: 0, folding: undefined, foldDue: false, lastDueFold: -Infinity, dropFailed: false }));
    return st;
  }

  /** What a start-up replayed from a table's journal files (folded by the next flush). */
  seedJournal(table: Table, gens: readonly number[], ids: Map<string, number>): void {
    const st = this.#journal(table);
    st.gens = [...gens];
    st.gen = Math.max(1, ...gens) + 1;
    st.ids = ids;
    st.bytes = Number.MAX_SAFE_INTEGER;
    this.#scheduleLazy(LAZY_FLUSH_MS);
  }

  /**
   * A lazy change persisted by a line of the table's journal instead of its segment's
   * rewrite: applied at once, appended by the next flush. A change building on one not yet
   * durable goes the usual way (it must not overtake it). `sameKeys`: the caller knows the
   * change leaves every indexed field as it was (see Table.set).
   */
  journalWrite(table: Table, id: string, json: string | undefined, rec: Rec | undefined, sameKeys = false): Promise<void> {
    if (!this.persister?.appendJournal || table.pending.has(id)) {
      this.#stage(table, id, json, rec, 'lazy');
      return RESOLVED;
    }
    table.set(id, json, rec, undefined, sameKeys);
    this.#journal(table).lines.set(id, json);
    this.#scheduleLazy(LAZY_FLUSH_MS);
    return RESOLVED;
  }

  #journalWork(): boolean {
    for (const st of this.#journals.values()) if (st.lines.size > 0 || (((this.#foldAll && !st.dropFailed) || this.#due(st)) && st.ids.size > 0)) return true;
    return false;
  }

  /** A delete asked for a fold and the last such fold is long enough ago. */
  #due(st: JournalState): boolean {
    return st.foldDue && Date.now() >= st.lastDueFold + DELETE_FOLD_MS;
  }

  /**
   * The journal line of a change to a record whose latest state is in the journal, or queued
   * for it (a lazy line the next flush appends): the journal gets this one too, or a replay
   * would bring the older one back. A delete asks for a fold (its record's old lines leave
   * the disk).
   */
  #follow(st: JournalState | undefined, id: string, json: string | undefined): void {
    if (!st || !(st.ids.has(id) || st.lines.has(id))) return;
    st.lines.set(id, json);
    if (json === undefined) {
      st.foldDue = true;
      this.#scheduleLazy(Math.max(0, st.lastDueFold + DELETE_FOLD_MS - Date.now()));
    }
  }

  #stage(table: Table, id: string, json: string | undefined, rec: Rec | undefined, durability: Durability): void {
    const cur = table.pending.get(id);
    if (!this.persister || (durability === 'lazy' && !cur)) {
      // Committed at once: its journal line (if it needs one) goes with the next flush. A
      // change that waits (below) gets its line from the flush that writes it (#route).
      this.#follow(this.#journals.get(table), id, json);
      const seg = table.set(id, json, rec, undefined);
      if (seg && this.persister) this.markDirty(table, seg);
      return;
    }
    const keep = table.indexes.size > 0 ? rec : undefined;
    if (cur && cur.gen === this.#gen) {
      cur.json = json;
      cur.rec = keep;
    } else {
      const committed = table.byId.get(id);
      if (!cur && !committed && json === undefined) return;
      const seg = cur?.seg ?? committed ?? table.reserve();
      const entry: Pending = { table, id, json, rec: keep, seg, fresh: !cur && !committed, gen: this.#gen };
      table.pending.set(id, entry);
      this.#current.push(entry);
    }
    if (durability === 'lazy') this.#scheduleLazy(LAZY_FLUSH_MS);
  }

  #wait(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      this.#kick();
    });
  }

  /** Resolves (never rejects) once every change not yet durable has been written or dropped. */
  barrier(): Promise<void> {
    if (!this.persister) return RESOLVED;
    return new Promise<void>((resolve) => {
      this.#waiters.push({ resolve, reject: () => resolve() });
      this.#kick();
    });
  }

  #scheduleLazy(ms: number): void {
    if (this.#lazyTimer || this.#closing) return;
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
    while (this.#current.length > 0 || this.#waiters.length > 0 || this.#dirty.size > 0 || this.#journalWork()) {
      this.#gen++;
      const batch = this.#current;
      const waiters = this.#waiters;
      const dirty = this.#dirty;
      this.#current = [];
      this.#waiters = [];
      this.#dirty = new Map();
      if (this.#lazyTimer) clearTimeout(this.#lazyTimer);
      this.#lazyTimer = null;

      const slicer = new Slicer(8, undefined, this.budget);
      const folds = await this.#startFolds(dirty, slicer);
      const journaled = this.#route(batch, dirty);
      try {
        await this.#appendJournals(slicer);
      } catch (err) {
        for (const [st] of folds) st.folding = undefined;
        this.#fail(batch, waiters, dirty, err);
        return;
      }
      const bySeg = new Map<Segment, { table: Table; changes?: Map<string, string | undefined> }>();
      for (const e of batch) {
        if (journaled?.has(e)) continue;
        let s = bySeg.get(e.seg);
        if (!s) bySeg.set(e.seg, (s = { table: e.table, changes: new Map() }));
        s.changes!.set(e.id, e.json);
      }
      for (const [seg, table] of dirty) if (!bySeg.has(seg)) bySeg.set(seg, { table });
      const files = [];
      for (const [seg, { table, changes }] of bySeg) {
        // From here its file may be replaced (even by a flush that fails): not as loaded any more.
        seg.written = true;
        files.push({ collection: table.def.name, segment: seg.no, key: table.def.key, segmentSize: table.segmentSize, lines: table.lines(seg, changes) });
        await slicer.maybePause();
      }
      try {
        if (files.length > 0) await this.persister!.write(files);
      } catch (err) {
        for (const [st] of folds) st.folding = undefined;
        this.#fail(batch, waiters, dirty, err);
        return;
      }
      await this.#endFolds(folds, slicer);
      for (const e of batch) {
        if (e.fresh) e.table.release(e.seg);
        e.table.set(e.id, e.json, e.rec, e.seg);
        if (e.table.pending.get(e.id) === e) e.table.pending.delete(e.id);
        await slicer.tick();
      }
      if (!this.health.ok) {
        this.health = { ok: true };
        this.hooks.onRecovered?.();
      }
      for (const w of waiters) w.resolve();
    }
  }

  /**
   * Which of a flush's changes are written as journal lines instead of their segment's rewrite:
   * an insert or update whose segment this flush would rewrite for few changes (fewer than a
   * quarter of a segment) and does not rewrite anyway (a lazy change, a fold). A line and one
   * fdatasync replace the file's rewrite, its rename and the directory's fsync; the fold writes
   * the segment later, once for all its lines. A delete rewrites its segment (its record leaves
   * the disk at once); a bulk write (an import) rewrites whole segments once instead of twice.
   * Every change to a record whose latest state is in the journal gets its line as well.
   */
  #route(batch: readonly Pending[], dirty: ReadonlyMap<Segment, Table>): Set<Pending> | undefined {
    if (!this.persister!.appendJournal) return undefined;
    const bySeg = new Map<Segment, number>();
    for (const e of batch) if (e.json !== undefined) bySeg.set(e.seg, (bySeg.get(e.seg) ?? 0) + 1);
    const journaled = new Set<Pending>();
    for (const e of batch) {
      if (e.json !== undefined && !dirty.has(e.seg) && bySeg.get(e.seg)! * 4 < e.table.segmentSize) {
        this.#journal(e.table).lines.set(e.id, e.json);
        journaled.add(e);
      } else this.#follow(this.#journals.get(e.table), e.id, e.json);
    }
    return journaled;
  }

  /**
   * Starts folding each journal grown past its fold point (every one when closing): a new
   * generation takes the appends from here, and the segments of its records join this flush.
   */
  async #startFolds(dirty: Map<Segment, Table>, slicer: Slicer): Promise<[JournalState, Table][]> {
    const folds: [JournalState, Table][] = [];
    for (const [table, st] of this.#journals) {
      if (st.folding !== undefined || st.ids.size === 0) continue;
      const at = Math.min(JOURNAL_MAX_BYTES, Math.max(JOURNAL_FOLD_BYTES, table.size * RECORD_BYTES));
      const due = this.#due(st);
      if ((!this.#foldAll || st.dropFailed) && st.bytes < at && !due) {
        // Asked for, not yet allowed: a later flush does it.
        if (st.foldDue) this.#scheduleLazy(st.lastDueFold + DELETE_FOLD_MS - Date.now());
        continue;
      }
      if (st.foldDue) {
        st.foldDue = false;
        st.lastDueFold = Date.now();
      }
      st.folding = st.gen;
      st.gen++;
      for (const id of st.ids.keys()) {
        const seg = table.byId.get(id);
        if (seg && !dirty.has(seg)) dirty.set(seg, table);
        await slicer.maybePause();
      }
      folds.push([st, table]);
    }
    return folds;
  }

  /** Appends every table's pending journal lines (put back should it fail). */
  async #appendJournals(slicer: Slicer): Promise<void> {
    for (const [table, st] of this.#journals) {
      if (st.lines.size === 0) continue;
      const lines = st.lines;
      st.lines = new Map();
      // Every id first, in one go: a write to one of them while the text is built below must
      // follow it into the journal (or a replay would put this older line over it).
      for (const id of lines.keys()) st.ids.set(id, st.gen);
      let text = '';
      for (const [id, json] of lines) {
        text += journalLine(id, json);
        await slicer.tick();
      }
      if (!st.gens.includes(st.gen)) st.gens.push(st.gen);
      try {
        await this.persister!.appendJournal!(table.def.name, st.gen, text);
      } catch (err) {
        for (const [id, json] of lines) if (!st.lines.has(id)) st.lines.set(id, json);
        throw err;
      }
      st.bytes += text.length;
    }
  }

  /** The folds' segments are written: their journal generations go. */
  async #endFolds(folds: readonly [JournalState, Table][], slicer: Slicer): Promise<void> {
    for (const [st, table] of folds) {
      const upTo = st.folding!;
      try {
        await this.persister!.dropJournal?.(table.def.name, upTo, st.gens);
      } catch (err) {
        st.folding = undefined;
        st.dropFailed = true;
        this.hooks.onJournalDropError?.(table.def.name, err);
        continue;
      }
      st.dropFailed = false;
      st.gens = st.gens.filter((g) => g > upTo);
      // Deleting from a Map while iterating it is safe; a line appended meanwhile carries a later gen.
      for (const [id, gen] of st.ids) {
        if (gen <= upTo) st.ids.delete(id);
        await slicer.tick();
      }
      st.bytes = 0;
      st.folding = undefined;
    }
  }

  /**
   * A failed flush: drop every change not yet durable (this batch's and any that came after:
   * they may build on it) and tell their writers; keep the lazy changes and rewrite, from the
   * committed state, any file the failed flush may have replaced.
   */
  #fail(batch: Pending[], waiters: Waiter[], dirty: Map<Segment, Table>, err: unknown): void {
    const e =
      err instanceof StoreError && err.code === 'UNAVAILABLE'
        ? err
        : new StoreError('UNAVAILABLE', `Could not write the store: ${(err as Error).message}`, { cause: err });
    const dropped = [...batch, ...this.#current];
    const later = this.#waiters;
    this.#current = [];
    this.#waiters = [];
    for (const p of dropped) {
      if (p.fresh) p.table.release(p.seg);
      p.table.pending.delete(p.id);
      // Its line may be in the journal already: the committed state goes after it.
      const st = this.#journals.get(p.table);
      if (st?.ids.has(p.id)) st.lines.set(p.id, p.table.json(p.id));
    }
    for (const [seg, table] of dirty) this.#dirty.set(seg, table);
    if (err instanceof FlushError) {
      for (const u of err.unsure) {
        for (const p of dropped) {
          if (p.table.def.name === u.collection && p.seg.no === u.segment) this.#dirty.set(p.seg, p.table);
        }
      }
    }
    for (const w of [...waiters, ...later]) w.reject(e);
    if (this.health.ok) {
      this.health = { ok: false, reason: e.message, since: new Date().toISOString() };
      this.hooks.onFlushError?.(e);
    }
    this.#scheduleRetry();
  }

  #scheduleRetry(): void {
    if (this.#retryTimer || this.#closing) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      if (this.#closing || this.health.ok) return;
      // Journal lines count: a failed flush may leave lines that put the committed state back
      // after lines it appended (see #fail), to be appended before anything else happens.
      if (this.#dirty.size > 0 || this.#current.length > 0 || this.#journalWork()) {
        this.#kick();
        if (this.#dirty.size > 0) this.#scheduleRetry();
        return;
      }
      if (this.#flushing) return this.#scheduleRetry();
      this.persister!.probe().then(
        () => {
          if (this.health.ok) return;
          this.health = { ok: true };
          this.hooks.onRecovered?.();
        },
        () => this.#scheduleRetry(),
      );
    }, RETRY_MS);
    this.#retryTimer.unref();
  }

  /** Resolves when every change so far (lazy ones included) is on disk. */
  async flush(): Promise<void> {
    if (!this.persister) return;
    if (this.#dirty.size === 0 && !this.#flushing && this.#current.length === 0 && this.#waiters.length === 0 && !this.#journalWork()) return;
    await this.#wait();
  }

  async close(): Promise<void> {
    try {
      if (this.persister) {
        this.#foldAll = true;
        for (;;) {
          if (this.#flushing) await this.#flushing;
          else if (this.#scheduled) await new Promise((r) => setImmediate(r));
          else if (this.#dirty.size > 0 || this.#current.length > 0 || this.#waiters.length > 0 || this.#journalWork()) {
            const done = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
            this.#startFlush();
            await done;
          } else break;
        }
      }
    } finally {
      this.#closing = true;
      if (this.#lazyTimer) clearTimeout(this.#lazyTimer);
      if (this.#retryTimer) clearTimeout(this.#retryTimer);
      this.#lazyTimer = null;
      this.#retryTimer = null;
      await this.persister?.close();
    }
  }
}
