/**
 * The analytics thread's visit log (file store, ANALYTICS_THREAD=worker): every visit counted is
 * appended to `DATA_DIR/analytics/visits.<gen>.log` and fsynced every ANALYTICS_FLUSH_MS, so
 * the link-day records can be written in long batches (VisitAnalytics, `visitLog`) and a crash
 * still loses at most the contract's second of clicks: the next start replays what the records
 * do not hold. docs/shortener.md, "The visit log".
 *
 * A file is lines: `#<no>\t<JSON [bot, browser, os, device, referrer]>` defines profile `no` of
 * the file, `<code>\t<no>\t<epoch ms>` is one visit, `!<code>` says the code's analytics were
 * deleted (url_delete): its visits before that line, in this file and older ones, are not
 * replayed. A last line cut short (no newline) is ignored.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../log.js';
import type { Store } from '../../state/types.js';
import { BOTS_FIELD, CLICKS_FIELD, countVisit, dayAdd, dayId, emptyCounts, LINK_DAYS, num, STORE_CAPS, type DayCounts, type VisitProfile } from './analytics-counters.js';
import { DEVICE_TYPES, type DeviceType, type UaInfo } from './analytics-ua.js';
import { lateClicksOf, type RollUpHooks } from './clicks.js';
import { CODE_PATTERN } from './links.js';

/** A visit log's file name: its generation, the time (epoch ms) its file was made, made larger when needed to grow. */
export const VISIT_LOG_FILE = /^visits\.([1-9]\d{0,15})\.log$/;
export const visitLogName = (gen: number): string => `visits.${gen}.log`;
/** Past this many bytes buffered, the lines are written at once rather than at the next sync. */
const MAX_BUFFERED = 1 << 20;
/** Link-days read and written per store call in a replay (the store's MAX_ADD_ITEMS). */
const REPLAY_CHUNK = 1_000;

/** A visit log file: its generation and path. */
export interface VisitLogFile {
  gen: number;
  file: string;
}

/** The visit log files in `dir`, oldest first. */
export function listVisitLogs(dir: string): VisitLogFile[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .flatMap((name) => {
      const m = VISIT_LOG_FILE.exec(name);
      return m ? [{ gen: Number(m[1]), file: path.join(dir, name) }] : [];
    })
    .sort((a, b) => a.gen - b.gen);
}

/** A new file's name (and the file's contents) on disk: its directory fsynced. */
function syncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The log this process appends to. Generations only grow (a record's `logGen` compares with
 * them): a new file's is the time, or its predecessor's plus one when the clock is behind it —
 * the newest file is never deleted, so a restart continues after it. A write that fails (disk
 * full, I/O error) ends the log for this process (`broken`): its lines written so far stay
 * replayable, and the counts go back to being written every ANALYTICS_FLUSH_MS.
 */
export class VisitLog {
  readonly #dir: string;
  readonly #log: Logger;
  /** The files a process before this one left, oldest first: what the records do not hold of them is counted again at the start (unreplayed). */
  readonly left: readonly VisitLogFile[];
  #gen: number;
  #fd: number | undefined;
  #buf = '';
  /** When the oldest line buffered was added (performance.now()). */
  #bufSince = 0;
  /** This file's profile numbers. */
  #nos = new WeakMap<VisitProfile, number>();
  #defs = 0;
  #broken = false;

  constructor(dir: string, log: Logger) {
    this.#dir = dir;
    this.#log = log;
    this.left = listVisitLogs(dir);
    this.#gen = nextGen(this.left.at(-1)?.gen ?? 0);
    this.#fd = this.#open(this.#gen);
  }

  #open(gen: number): number {
    const fd = fs.openSync(path.join(this.#dir, visitLogName(gen)), 'a', 0o600);
    syncDir(this.#dir);
    return fd;
  }

  /** The generation of the file appended to. */
  get gen(): number {
    return this.#gen;
  }

  /** A write failed: visits are no longer logged by this process. */
  get broken(): boolean {
    return this.#broken;
  }

  /** How long the oldest visit not on disk yet has waited (ms; 0: none). */
  unsyncedMs(): number {
    return this.#buf === '' ? 0 : performance.now() - this.#bufSince;
  }

  /** Appends a visit of `code` (its profile `p` made of `ua` and `referrer`) at `now`. */
  visit(code: string, p: VisitProfile, ua: UaInfo, referrer: string, now: number): void {
    if (this.#broken) return;
    let no = this.#nos.get(p);
    if (no === undefined) {
      this.#nos.set(p, (no = ++this.#defs));
      this.#add(`#${no}\t${JSON.stringify([ua.bot, ua.browser, ua.os, ua.device, referrer])}\n`);
    }
    this.#add(`${code}\t${no}\t${now}\n`);
  }

  /** Records that `code`'s analytics were deleted, on disk when it returns (see the file's lines). */
  drop(code: string): void {
    if (this.#broken) return;
    this.#add(`!${code}\n`);
    this.sync();
  }

  #add(line: string): void {
    if (this.#buf === '') this.#bufSince = performance.now();
    this.#buf += line;
    if (this.#buf.length > MAX_BUFFERED) this.sync();
  }

  /** Writes the buffered lines and fdatasyncs them. */
  sync(): void {
    if (this.#buf === '' || this.#fd === undefined) return;
    const bytes = Buffer.from(this.#buf, 'utf8');
    this.#buf = '';
    try {
      for (let at = 0; at < bytes.length; ) at += fs.writeSync(this.#fd, bytes, at);
      fs.fdatasyncSync(this.#fd);
    } catch (err) {
      this.#break('writing the visit log failed', err);
    }
  }

  #break(what: string, err: unknown): void {
    this.#broken = true;
    this.#buf = '';
    try {
      if (this.#fd !== undefined) fs.closeSync(this.#fd);
    } catch {
      // Closed or not, it is not written again.
    }
    this.#fd = undefined;
    this.#log.error(`analytics: ${what}; the link-day records are written every 250 ms instead until a restart`, err);
  }

  /**
   * Ends the current file (written and synced) and starts the next; resolves with the ended
   * file's generation. Broken: the last file's generation, and no new file.
   */
  rotate(): number {
    this.sync();
    const ended = this.#gen;
    if (this.#broken) return ended;
    try {
      fs.closeSync(this.#fd!);
      this.#fd = undefined;
      this.#gen = nextGen(ended);
      this.#fd = this.#open(this.#gen);
    } catch (err) {
      this.#break('starting a new visit log file failed', err);
    }
    this.#nos = new WeakMap();
    this.#defs = 0;
    return ended;
  }

  /**
   * Deletes the files up to `gen` (their visits are in the records, durably), oldest first: a
   * failure stops there (a later file's deletion line must not go before the visits it hides).
   * The file appended to stays.
   */
  deleteThrough(gen: number): void {
    for (const { gen: g, file } of listVisitLogs(this.#dir)) {
      if (g > gen || g === this.#gen) break;
      try {
        fs.rmSync(file);
      } catch (err) {
        this.#log.warn('analytics: deleting a visit log written to the records failed (it is replayed at the next start, which adds nothing twice)', err);
        return;
      }
    }
  }

  /** Writes what is buffered and closes the file (the next start replays it, or finds it empty). */
  close(): void {
    this.sync();
    try {
      if (this.#fd !== undefined) fs.closeSync(this.#fd);
    } catch (err) {
      this.#log.warn('analytics: closing the visit log failed', err);
    }
    this.#fd = undefined;
  }
}

/** The generation after `after`: the time, or `after + 1` when the clock is not past it. */
function nextGen(after: number): number {
  return Math.max(Date.now(), after + 1);
}

/** One file's visits read back: its link-days' counts (LINK_DAYS id → counts). */
interface FileCounts extends VisitLogFile {
  days: Map<string, { code: string; day: string; counts: DayCounts }>;
}

/** The visits (clicks and bots) counted in a link-day's counts. */
function visitsOf(c: DayCounts): number {
  if (c.fields === undefined) return c.n;
  return (c.fields[CLICKS_FIELD] ?? 0) + (c.fields[BOTS_FIELD] ?? 0);
}

/** A def line's profile, checked (a line that does not parse is skipped). */
function parseDef(json: string): { ua: UaInfo; referrer: string } | undefined {
  try {
    const v = JSON.parse(json) as unknown;
    if (!Array.isArray(v) || v.length !== 5) return undefined;
    const [bot, browser, os, device, referrer] = v as unknown[];
    if (typeof bot !== 'boolean' || typeof browser !== 'string' || typeof os !== 'string' || !DEVICE_TYPES.includes(device as DeviceType) || typeof referrer !== 'string') return undefined;
    return { ua: { bot, browser, os, device: device as DeviceType }, referrer };
  } catch {
    return undefined;
  }
}

/**
 * Reads the log files in order into each one's counts per link-day; a deletion line removes its
 * code from what was read before it (every file so far). Lines that do not parse are skipped
 * and counted.
 */
export function readVisitLogs(files: readonly VisitLogFile[]): { files: FileCounts[]; visits: number; skipped: number } {
  const out: FileCounts[] = [];
  let visits = 0;
  let skipped = 0;
  for (const { gen, file } of files) {
    const days = new Map<string, { code: string; day: string; counts: DayCounts }>();
    out.push({ gen, file, days });
    const defs = new Map<number, { ua: UaInfo; referrer: string }>();
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    // The last piece is what follows the last newline: empty, or a line cut short.
    lines.pop();
    for (const line of lines) {
      if (line.startsWith('#')) {
        const tab = line.indexOf('\t');
        const def = tab > 1 ? parseDef(line.slice(tab + 1)) : undefined;
        if (def) defs.set(Number(line.slice(1, tab)), def);
        else skipped++;
        continue;
      }
      if (line.startsWith('!')) {
        const code = line.slice(1);
        for (const f of out) for (const [id, d] of f.days) if (d.code === code) f.days.delete(id);
        continue;
      }
      const [code, no, at, extra] = line.split('\t');
      const def = defs.get(Number(no));
      const now = Number(at);
      if (extra !== undefined || code === undefined || !CODE_PATTERN.test(code) || def === undefined || !Number.isSafeInteger(now) || now <= 0) {
        skipped++;
        continue;
      }
      const iso = new Date(now).toISOString();
      const day = iso.slice(0, 10);
      const id = dayId(day, code);
      let d = days.get(id);
      if (d === undefined) days.set(id, (d = { code, day, counts: emptyCounts() }));
      countVisit(d.counts, def.ua, def.referrer, Number(iso.slice(11, 13)), now);
      visits++;
    }
  }
  return { files: out, visits, skipped };
}

/** A link-day's counts a visit log file holds and its record does not (see unreplayed). */
export interface Unreplayed {
  id: string;
  code: string;
  day: string;
  counts: DayCounts;
}

/**
 * What visit log files hold and `store`'s link-day records do not, file by file: a link-day's
 * counts of a file are due only when its record's `logGen` is below the file's. A record is
 * written whole (its counts and its `logGen` together), and a batch holds the visits of the
 * files up to the generation it writes and none of later ones, so a batch a crash cut short
 * left each record with a file's visits and its generation or with neither: nothing is counted
 * twice. Chunks of REPLAY_CHUNK, each with the file's generation.
 */
export async function* unreplayed(files: readonly VisitLogFile[], store: Store, log: Logger): AsyncGenerator<{ gen: number; at: number; due: Unreplayed[] }> {
  const read = readVisitLogs(files);
  if (read.skipped > 0) log.warn(`analytics: ${read.skipped} lines of the visit log did not parse and were skipped`);
  const col = store.collection(LINK_DAYS);
  for (const { gen, days } of read.files) {
    const entries = [...days.entries()];
    for (let at = 0; at < entries.length; at += REPLAY_CHUNK) {
      const chunk = entries.slice(at, at + REPLAY_CHUNK);
      const recs = await col.getMany(chunk.map(([id]) => id));
      const due = chunk.filter((_, i) => num(recs[i]?.logGen) < gen).map(([id, d]) => ({ id, ...d }));
      if (due.length > 0) yield { gen, at, due };
    }
  }
}

/**
 * All that unreplayed finds, read before any of it is used: the analytics thread's restore (a
 * batch between two files' reads would tag a record past a file not restored yet).
 */
export async function collectUnreplayed(files: readonly VisitLogFile[], store: Store, log: Logger): Promise<Unreplayed[]> {
  const due: Unreplayed[] = [];
  for await (const chunk of unreplayed(files, store, log)) due.push(...chunk.due);
  return due;
}

/** The visits (clicks and bots) of link-days' counts. */
export function visitsIn(entries: readonly { counts: DayCounts }[]): number {
  let n = 0;
  for (const { counts } of entries) n += visitsOf(counts);
  return n;
}

/**
 * Replays visit log files into `store`'s link-day records (the store holding LINK_DAYS: a
 * routed one, without the analytics thread, which replays by counting them again instead:
 * VisitAnalytics.restore): what unreplayed finds is added, each record tagged with its file's
 * generation. Clicks of a day the roll-up has passed go to their links' totals (`rollUp.late`),
 * as a late write's do. Resolves, once the records are on disk, with how many visits were
 * replayed; the caller deletes the files.
 */
export async function replayVisitLogs(files: readonly VisitLogFile[], store: Store, rollUp: RollUpHooks, log: Logger): Promise<number> {
  if (files.length === 0) return 0;
  const col = store.collection(LINK_DAYS);
  let replayed = 0;
  for await (const { gen, at, due } of unreplayed(files, store, log)) {
    const through = await rollUp.through();
    const late = lateClicksOf(due, through);
    if (late.length > 0) await rollUp.late(late, `visit-log.${gen}.${at}`);
    const out = await col.addMany(
      due.map((d) => dayAdd(d.id, d.counts, gen)),
      { caps: STORE_CAPS, durability: 'lazy' },
    );
    for (const r of out) if (r.status === 'rejected') throw r.reason;
    replayed += visitsIn(due);
  }
  await store.flush();
  if (replayed > 0) log.warn(`analytics: ${replayed} visits the link-day records did not hold yet (a crash, or a stop that could not write them) were added from the visit log`);
  return replayed;
}

/**
 * For what opens the file store without the analytics thread (a server counting in its main
 * thread, `export`, `import`): replays the visit logs in `dir` (DATA_DIR/analytics) and empties
 * them, the newest file kept (empty) so that generations keep growing. Resolves with how many
 * visits were replayed.
 */
export async function settleVisitLogs(dir: string, store: Store, rollUp: RollUpHooks, log: Logger): Promise<number> {
  const files = listVisitLogs(dir);
  if (files.length === 0) return 0;
  const n = await replayVisitLogs(files, store, rollUp, log);
  const newest = files.at(-1)!;
  for (const f of files) if (f !== newest) fs.rmSync(f.file, { force: true });
  fs.truncateSync(newest.file, 0);
  return n;
}
