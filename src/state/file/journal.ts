/**
 * The file store's record journal: lazy `add`s (counters), and durable inserts and updates that
 * touch few records of a segment (Committer.#route), are persisted as appended lines — each
 * the record's whole new JSON, so replaying a line twice is harmless — instead of rewriting the
 * record's segment file. With visits spread over many links nearly every counter write would
 * otherwise rewrite a 500-record file for one record, and every create its table's last file.
 *
 * Files: `<collection>.journal.<gen>.log` in DATA_DIR, one line per change: the id as a JSON
 * string, a tab, then the record's JSON as it is (or `null`: deleted). Lines written before
 * session 17 are `[id, json]` with the record's JSON as a string, escaped a second time (≈ 1 µs
 * more per line, a sixth more bytes); both are read. The committer folds a journal once it outgrows its
 * table (or at a clean close): the segments of its records are rewritten, then its files go.
 * A start-up after a crash replays the files, in order, over the segments.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Rec } from '../records.js';

export const JOURNAL_FILE = /^([a-z][a-z0-9_]{0,39})\.journal\.([1-9]\d{0,8})\.log$/;
/** A journal is folded once it holds this many bytes, or twice its table's (whichever is more). */
export const JOURNAL_FOLD_BYTES = 16 * 1024 * 1024;

export function journalFileName(collection: string, gen: number): string {
  return `${collection}.journal.${gen}.log`;
}

/** One journal line: `"<id>"<TAB><record JSON or null>` (JSON escapes every tab and newline inside). */
export function journalLine(id: string, json: string | undefined): string {
  return `${JSON.stringify(id)}\t${json ?? 'null'}\n`;
}

/** A journal line's change, or undefined when it is not a whole one of either layout. */
export function parseJournalLine(line: string): [string, string | undefined] | undefined {
  const c = parseChange(line);
  return c && [c[0], c[1]];
}

/** A change read from a journal: the id, the record's JSON and the record parsed (undefined: deleted). */
export type JournalChange = [id: string, json: string | undefined, rec: Rec | undefined];

function parseChange(line: string): JournalChange | undefined {
  let v: unknown;
  try {
    if (line.startsWith('[')) {
      // The layout before session 17: [id, json as a string or null].
      v = JSON.parse(line);
      if (!Array.isArray(v) || v.length !== 2 || typeof v[0] !== 'string') return undefined;
      if (v[1] === null) return [v[0], undefined, undefined];
      return typeof v[1] === 'string' ? recordOf(v[0], v[1]) : undefined;
    }
    const tab = line.indexOf('\t');
    if (tab < 0) return undefined;
    const json = line.slice(tab + 1);
    v = JSON.parse(line.slice(0, tab));
    if (typeof v !== 'string') return undefined;
    return json === 'null' ? [v, undefined, undefined] : recordOf(v, json);
  } catch {
    return undefined;
  }
}

/** The change of a line holding a record: parsed once, here (a replay hands it on to the table's indexes). */
function recordOf(id: string, json: string): JournalChange | undefined {
  const rec: unknown = JSON.parse(json);
  return typeof rec === 'object' && rec !== null && !Array.isArray(rec) ? [id, json, rec as Rec] : undefined;
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
 * ignored: it was never acknowledged as durable. A whole line that is not a change is skipped
 * and told to `skipped` (the store logs it): the store's own appends leave none (a failed
 * append is cut off again), so one is damage or a hand edit.
 */
export function* readJournal(file: string, skipped?: () => void): Generator<JournalChange> {
  const text = fs.readFileSync(file, 'utf8');
  let at = 0;
  for (;;) {
    const nl = text.indexOf('\n', at);
    if (nl < 0) return;
    const change = parseChange(text.slice(at, nl));
    at = nl + 1;
    if (change) yield change;
    else skipped?.();
  }
}

/**
 * The id field of a collection known only by its journal files (no segment file names it, and
 * no definition was given): the one field of a record whose value is its id, if one record
 * shows it unambiguously.
 */
export function journalKey(files: readonly string[]): string | undefined {
  for (const file of files) {
    for (const [id, , rec] of readJournal(file)) {
      if (rec === undefined) continue;
      const fields = Object.entries(rec).filter(([, v]) => v === id);
      if (fields.length === 1) return fields[0]![0];
    }
  }
  return undefined;
}

/** Appends to and removes journal files (the persister's side). */
export class JournalFiles {
  readonly #open = new Map<string, fsp.FileHandle>();
  /** Files whose last append failed and could not be cut back: they may end in part of a line (see append). */
  readonly #broken = new Set<string>();
  /** Each open file's length after its last whole append. */
  readonly #sizes = new Map<string, number>();
  /** Files opened whose directory entry is not known durable yet. */
  readonly #unnamed = new Set<string>();

  constructor(
    readonly dir: string,
    readonly fsync: boolean,
    /** Makes the directory's entries durable (a new journal file's name). */
    readonly syncDir: () => Promise<void> = async () => {},
  ) {}

  /**
   * Appends text to a journal file (created if needed); durable when fsync is on: the file's
   * data, and once after this opened it, the directory's entry (durable writes are acknowledged
   * by their line: see Committer.#route).
   */
  async append(collection: string, gen: number, text: string): Promise<void> {
    const name = journalFileName(collection, gen);
    let fh = this.#open.get(name);
    if (!fh) {
      fh = await fsp.open(path.join(this.dir, name), 'a');
      this.#open.set(name, fh);
      this.#unnamed.add(name);
      try {
        this.#sizes.set(name, (await fh.stat()).size);
      } catch {
        this.#broken.add(name);
      }
    }
    // After a failed append that could not be cut back the file may end in part of a line: a
    // newline first ends it (a broken line, skipped by a replay) so that this text's first line
    // stays whole.
    const buf = Buffer.from(this.#broken.has(name) ? `\n${text}` : text);
    const size = this.#sizes.get(name);
    try {
      for (let at = 0; at < buf.length; ) at += (await fh.write(buf, at)).bytesWritten;
      if (this.fsync) await fh.datasync();
      if (this.fsync && this.#unnamed.has(name)) {
        await this.syncDir();
        this.#unnamed.delete(name);
      }
    } catch (err) {
      // Cut the file back to its last whole append: no part of this text stays to be replayed.
      const cut = size !== undefined && (await fh.truncate(size).then(() => true, () => false));
      if (cut) this.#broken.delete(name);
      else {
        this.#broken.add(name);
        this.#sizes.delete(name);
      }
      throw err;
    }
    this.#broken.delete(name);
    if (size !== undefined) this.#sizes.set(name, size + buf.length);
    else {
      // Its length unknown (a failed stat or cut): learnt again, so that a later failure can be cut back.
      const now = await fh.stat().then((st) => st.size, () => undefined);
      if (now !== undefined) this.#sizes.set(name, now);
    }
  }

  /** Removes a collection's journal files up to generation `upTo` (their records are in the segments now). */
  async drop(collection: string, upTo: number, gens: readonly number[]): Promise<void> {
    for (const gen of gens) {
      if (gen > upTo) continue;
      const name = journalFileName(collection, gen);
      await this.#open.get(name)?.close();
      this.#open.delete(name);
      this.#broken.delete(name);
      this.#unnamed.delete(name);
      this.#sizes.delete(name);
      await fsp.rm(path.join(this.dir, name), { force: true });
    }
  }

  async close(): Promise<void> {
    for (const fh of this.#open.values()) await fh.close().catch(() => {});
    this.#open.clear();
  }
}
