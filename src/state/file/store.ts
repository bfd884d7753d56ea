import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../log.js';
import { FlushError, type Persister, type SegmentData } from './committer.js';
import { Slicer } from './bulk.js';
import { Engine } from './engine.js';
import { JournalFiles, journalFileName, listJournals } from './journal.js';
import { CHECKPOINT_FILE, checkpointFits, checkpointHeader, parsedFromCheckpoint, readBody, writeCheckpoint, type FoundCheckpoint } from './checkpoint.js';
import type { SegmentSource, SegmentStream } from './loader.js';
import { lockDataDir } from './lock.js';
import {
  checkFraming,
  CORRUPT_FILE,
  CorruptFile,
  DATA_FILE,
  DurableJsonFile,
  segmentFileName,
  type FileHeader,
  serialise,
  TEMP_FILE,
} from './segment-file.js';
import { CorruptSegment, parseSegment } from './parse-segment.js';
import { LoadPoolUnavailable, SegmentLoadPool } from './segment-load-pool.js';
import { StoreError, type Store } from '../types.js';

export interface FileStoreOptions {
  log: Logger;
  /** Shown to a second process that finds the dir taken ('server', 'keys cli', …). */
  purpose?: string;
  /** fsync file and directory on every flush (default true; see docs/state.md). */
  fsync?: boolean;
  /**
   * A collection whose files hold at least this many bytes is parsed on a worker thread at
   * start-up (default OFF_THREAD_LOAD_BYTES); smaller ones on the main thread (a worker costs
   * ≈ 50 ms to start).
   */
  offThreadLoadBytes?: number;
  /** A collection whose files hold at least this many bytes gets a load checkpoint at close (default CHECKPOINT_BYTES). */
  checkpointBytes?: number;
}

/** ≈ 30k short links: below it, starting the load worker costs more than it saves. */
export const OFF_THREAD_LOAD_BYTES = 8 * 1024 * 1024;
/** A collection whose files hold this much gets a load checkpoint at close (./checkpoint.ts); a smaller one loads in a moment without. */
export const CHECKPOINT_BYTES = OFF_THREAD_LOAD_BYTES;

/** Files written at once by one flush (a big flush must not exhaust file descriptors). */
const PARALLEL_FILES = 16;

async function eachLimited<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<PromiseSettledResult<void>[]> {
  const out: PromiseSettledResult<void>[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        await fn(items[i]!);
        out[i] = { status: 'fulfilled', value: undefined };
      } catch (reason) {
        out[i] = { status: 'rejected', reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_FILES, items.length) }, worker));
  return out;
}

const firstFailure = (results: PromiseSettledResult<void>[]) => results.find((r): r is PromiseRejectedResult => r.status === 'rejected');

function keptAside(dir: string, name: string, reason: string): StoreError {
  const aside = `${name}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  fs.renameSync(path.join(dir, name), path.join(dir, aside));
  return new StoreError(
    'CORRUPT',
    `DATA_DIR ${dir}: ${name} does not parse (${reason}). It was kept aside as ${aside}; ` +
      'the server will not start without it. Repair it and rename it back to ' +
      `${name}, or move it out of DATA_DIR to start without its records.`,
  );
}

/** Writes each batch of segment files all-or-nothing as far as the disk allows (see DurableJsonFile). */
function filePersister(dir: string, fsync: boolean): Persister {
  let dirFd: fs.promises.FileHandle | undefined;
  const syncDir = async () => {
    if (!fsync) return;
    dirFd ??= await fsp.open(dir, 'r');
    await dirFd.sync();
  };
  const journals = new JournalFiles(dir, fsync, syncDir);
  return {
    async write(batch: SegmentData[]) {
      const files = batch.map((s) => ({ s, f: new DurableJsonFile(path.join(dir, segmentFileName(s.collection, s.segment)), fsync) }));
      const what = (err: unknown) => `Could not write DATA_DIR ${dir}: ${(err as Error).message}`;
      // Every temp file written and fsynced first: a full or failing disk stops the flush here,
      // before any data file is replaced.
      // A flush of many segments (a journal's fold) serialises them in slices, not in one turn.
      const slicer = new Slicer();
      const staged = firstFailure(
        await eachLimited(files, async ({ s, f }) => {
          await slicer.maybePause();
          await f.write(serialise(s));
        }),
      );
      if (staged) {
        await Promise.all(files.map(({ f }) => f.discard()));
        throw new FlushError(what(staged.reason), [], staged.reason);
      }
      const unsure = batch.map((s) => ({ collection: s.collection, segment: s.segment }));
      const renamed = firstFailure(await eachLimited(files, ({ f }) => f.publish()));
      if (renamed) {
        await Promise.all(files.map(({ f }) => f.discard()));
        throw new FlushError(what(renamed.reason), unsure, renamed.reason);
      }
      try {
        await syncDir();
      } catch (err) {
        throw new FlushError(what(err), unsure, err);
      }
    },
    async probe() {
      const probe = new DurableJsonFile(path.join(dir, '.devtoolbox.probe.json'), fsync);
      try {
        await probe.write('{}\n');
      } finally {
        await probe.discard();
      }
    },
    appendJournal: (collection, gen, text) => journals.append(collection, gen, text),
    dropJournal: (collection, upTo, gens) => journals.drop(collection, upTo, gens),
    async close() {
      await journals.close();
      await dirFd?.close();
      dirFd = undefined;
    },
  };
}

/**
 * A collection's files as the load takes them when its checkpoint describes them (see
 * ./checkpoint.ts): each file's bytes, with its records' offsets and hashes from the checkpoint,
 * and the index keys already in order — nothing parsed. Should the body not check out, or a
 * file not be the size recorded, the files from there on are parsed here and the indexes
 * rebuilt from the records, as after a load worker's failure.
 */
function fromCheckpoint(found: FoundCheckpoint, files: readonly string[], def: { name: string; key: string }, fields: readonly string[], parse: () => SegmentStream): SegmentStream {
  const body = readBody(found);
  /** The body did not check out: the files are read as without a checkpoint. */
  let instead: SegmentStream | undefined;
  /** Every file so far was the size the checkpoint says. */
  let trusted = true;
  return {
    async file(i) {
      if (i === 0 && !(await body)) instead = parse();
      if (instead) return instead.file(i);
      const cp = trusted ? await body : undefined;
      // Read here, not on the thread pool: fs.readFile's steps (open, stat, read, close, each a
      // hop back to this thread) cost this thread more than reading a file of a few hundred KB.
      const buf = fs.readFileSync(files[i]!);
      const parsed = cp && parsedFromCheckpoint(buf, cp.files[i]!);
      if (parsed) return parsed;
      trusted = false;
      return parseSegment(buf, def, fields);
    },
    sortedKeys: async () => (instead ? instead.sortedKeys() : trusted ? (await body)?.keys.map((list) => [list]) : undefined),
  };
}

/** A collection's data files found in DATA_DIR, with what their headers (or checkpoint) say. */
interface FoundCollection {
  header: FileHeader;
  /** Segment numbers, ascending, and their files' paths in the same order. */
  segments: number[];
  files: string[];
  bytes: number;
  checkpoint?: FoundCheckpoint;
}

/**
 * The data files of DATA_DIR by collection. Refuses (CORRUPT) while data kept aside remains;
 * drops temp files of flushes that never renamed.
 */
function listDataFiles(dir: string): Map<string, FoundCollection> {
  const names = fs.readdirSync(dir);
  const kept = names.filter((n) => CORRUPT_FILE.test(n));
  if (kept.length > 0) {
    throw new StoreError(
      'CORRUPT',
      `DATA_DIR ${dir} holds data kept aside after a failed start-up: ${kept.join(', ')}. ` +
        'Repair it and rename it back (without the .corrupt-… suffix), or move it out of DATA_DIR to start without it.',
    );
  }
  const found = new Map<string, FoundCollection>();
  for (const name of names.sort()) {
    if (TEMP_FILE.test(name) || (CHECKPOINT_FILE.test(name) && name.endsWith('.tmp'))) {
      // A temp file from a flush that never reached its rename: it was never acknowledged.
      fs.rmSync(path.join(dir, name), { force: true, recursive: true });
      continue;
    }
    const m = DATA_FILE.exec(name);
    if (!m) continue;
    let f = found.get(m[1]!);
    if (!f) found.set(m[1]!, (f = { header: {}, segments: [], files: [], bytes: 0 }));
    f.segments.push(m[2] ? Number(m[2]) : 1);
  }
  for (const [collection, f] of found) {
    f.segments.sort((a, b) => a - b);
    f.files = f.segments.map((segment) => path.join(dir, segmentFileName(collection, segment)));
  }
  return found;
}

/**
 * Fills in a collection's header and size: from its checkpoint when that describes its files as
 * they are (the store checked or wrote them before), else from each file's framing, checked (a
 * truncated file is kept aside: CORRUPT).
 */
function readHeaders(dir: string, collection: string, f: FoundCollection): void {
  f.checkpoint = checkpointHeader(dir, collection, f.segments, f.files);
  if (f.checkpoint) {
    f.header = { key: f.checkpoint.header.key, segmentSize: f.checkpoint.header.segmentSize };
    f.bytes = f.checkpoint.header.files.reduce((n, e) => n + e[1], 0);
    return;
  }
  for (const file of f.files) {
    let header: FileHeader & { bytes: number };
    try {
      header = checkFraming(file);
    } catch (err) {
      if (!(err instanceof CorruptFile)) throw err;
      throw keptAside(dir, path.basename(file), err.message);
    }
    f.bytes += header.bytes;
    f.header.key ??= header.key;
    f.header.segmentSize ??= header.segmentSize;
  }
}

/** A collection's files parsed in order: by the load pool when `offThread`, else (or should the pool fail) here. */
function parsedFiles(files: readonly string[], def: { name: string; key: string }, fields: readonly string[], loadPool: SegmentLoadPool | undefined): SegmentStream {
  const session = loadPool?.load(files, def, fields);
  return {
    async file(i) {
      if (session) {
        try {
          const r = await session.file(i);
          if ('corrupt' in r) throw new CorruptSegment(r.corrupt);
          return r;
        } catch (err) {
          // The worker could not (it failed to start or died, or the read failed): here, as before.
          if (!(err instanceof LoadPoolUnavailable)) throw err;
        }
      }
      return parseSegment(await fsp.readFile(files[i]!), def, fields);
    },
    sortedKeys: async () => session?.keys,
  };
}

/** Where the engine loads a collection's records from: its checkpoint if it fits the definition, else its files parsed. */
function segmentSource(dir: string, collection: string, f: FoundCollection, loadPool: SegmentLoadPool | undefined): SegmentSource {
  return {
    segments: f.segments,
    open(def, fields) {
      const checkpoint = f.checkpoint && checkpointFits(f.checkpoint, def.key, fields) ? f.checkpoint : undefined;
      const parse = () => parsedFiles(f.files, def, fields, loadPool);
      return checkpoint ? fromCheckpoint(checkpoint, f.files, def, fields, parse) : parse();
    },
    corrupt: (segment, reason) => keptAside(dir, segmentFileName(collection, segment), reason),
  };
}

/**
 * Opens DATA_DIR: takes the lock, refuses while data kept aside remains, drops temp files of
 * flushes that never renamed, and checks every data file's framing (a truncated file is kept
 * aside and the open fails). Records are read when their collection loads (store.preload, or
 * the first use), in slices.
 */
export async function openFileStore(dir: string, opts: FileStoreOptions): Promise<Store> {
  const fsync = opts.fsync ?? true;
  fs.mkdirSync(dir, { recursive: true });
  const release = await lockDataDir(dir, opts.purpose ?? 'server');
  try {
    const found = listDataFiles(dir);
    for (const [collection, f] of found) readHeaders(dir, collection, f);
    const loadPool = new SegmentLoadPool();
    const offThreadBytes = opts.offThreadLoadBytes ?? OFF_THREAD_LOAD_BYTES;
    // Warmed for a large collection that will be parsed (not one with a checkpoint).
    if ([...found.values()].some((f) => f.bytes >= offThreadBytes && !f.checkpoint)) loadPool.warm();
    const sources = new Map<string, { header: FileHeader; source: SegmentSource }>();
    for (const [collection, f] of found) {
      sources.set(collection, { header: f.header, source: segmentSource(dir, collection, f, f.bytes >= offThreadBytes ? loadPool : undefined) });
    }
    const journals = new Map<string, { gens: number[]; files: string[] }>();
    for (const [collection, gens] of listJournals(fs.readdirSync(dir))) journals.set(collection, { gens, files: gens.map((g) => path.join(dir, journalFileName(collection, g))) });
    return new Engine({
      kind: 'file',
      persister: filePersister(dir, fsync),
      sources,
      journals,
      onFlushError: (err) =>
        opts.log.error('store: a flush failed; its writes were rolled back and refused (UNAVAILABLE); retrying every second', err),
      onRecovered: () => opts.log.info('store: DATA_DIR is writable again'),
      onJournalDropError: (collection, err) =>
        opts.log.warn(`store: the journal files of ${collection} could not be removed after their fold; they stay (a replay of them is harmless) and the next fold tries again`, err),
      onJournalSkipped: (file, lines) =>
        opts.log.warn(`store: ${lines} line(s) of ${file} are not changes (damaged or edited by hand) and were skipped; the changes they held are lost`),
      onClose: async () => {
        await loadPool.close();
        await release();
      },
      checkpoint: (table) => writeCheckpoint(dir, table, { fsync, minBytes: opts.checkpointBytes ?? CHECKPOINT_BYTES }),
    });
  } catch (err) {
    await release();
    throw err;
  }
}
