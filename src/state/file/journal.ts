/**
 * The file store's record journal: lazy `add`s (counters) are persisted as appended lines —
 * each the record's whole new JSON, so replaying a line twice is harmless — instead of
 * rewriting the record's segment file every LAZY_FLUSH_MS. With visits spread over many links
 * nearly every counter write would otherwise rewrite a 500-record file for one record.
 *
 * Files: `<collection>.journal.<gen>.log` in DATA_DIR, one line per change:
 * `[id, json]` (json null: deleted). The committer folds a journal once it outgrows its
 * table (or at a clean close): the segments of its records are rewritten, then its files go.
 * A start-up after a crash replays the files, in order, over the segments.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

export const JOURNAL_FILE = /^([a-z][a-z0-9_]{0,39})\.journal\.([1-9]\d{0,8})\.log$/;
/** A journal is folded once it holds this many bytes, or twice its table's (whichever is more). */
export const JOURNAL_FOLD_BYTES = 16 * 1024 * 1024;

export function journalFileName(collection: string, gen: number): string {
  return `${collection}.journal.${gen}.log`;
}

/** One journal line. */
export function journalLine(id: string, json: string | undefined): string {
  return `${JSON.stringify([id, json ?? null])}\n`;
}

/** The journal files of DATA_DIR by collection: generations ascending. */
export function listJournals(names: readonly string[]): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const name of names) {
    const m = JOURNAL_FILE.exec(name);
    if (!m) continue;
    const gens = out.get(m[1]!) ?? [];
    gens.push(Number(m[2]));
    out.set(m[1]!, gens);
  }
  for (const gens of out.values()) gens.sort((a, b) => a - b);
  return out;
}

/**
 * The changes of a journal file, in order. A last line cut short (a crash mid-append) is
 * ignored: it was never acknowledged as durable.
 */
export function* readJournal(file: string): Generator<[string, string | undefined]> {
  const text = fs.readFileSync(file, 'utf8');
  let at = 0;
  for (;;) {
    const nl = text.indexOf('\n', at);
    if (nl < 0) return;
    const line = text.slice(at, nl);
    at = nl + 1;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      continue;
    }
    if (Array.isArray(v) && typeof v[0] === 'string' && (typeof v[1] === 'string' || v[1] === null)) yield [v[0], v[1] ?? undefined];
  }
}

/** Appends to and removes journal files (the persister's side). */
export class JournalFiles {
  readonly #open = new Map<string, fsp.FileHandle>();

  constructor(
    readonly dir: string,
    readonly fsync: boolean,
  ) {}

  /** Appends text to a journal file (created if needed); durable when fsync is on. */
  async append(collection: string, gen: number, text: string): Promise<void> {
    const name = journalFileName(collection, gen);
    let fh = this.#open.get(name);
    if (!fh) {
      fh = await fsp.open(path.join(this.dir, name), 'a');
      this.#open.set(name, fh);
    }
    await fh.write(text);
    if (this.fsync) await fh.datasync();
  }

  /** Removes a collection's journal files up to generation `upTo` (their records are in the segments now). */
  async drop(collection: string, upTo: number, gens: readonly number[]): Promise<void> {
    for (const gen of gens) {
      if (gen > upTo) continue;
      const name = journalFileName(collection, gen);
      await this.#open.get(name)?.close();
      this.#open.delete(name);
      await fsp.rm(path.join(this.dir, name), { force: true });
    }
  }

  async close(): Promise<void> {
    for (const fh of this.#open.values()) await fh.close().catch(() => {});
    this.#open.clear();
  }
}
