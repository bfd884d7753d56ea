import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Low, type Adapter } from 'lowdb';
import type { Logger } from '../log.js';
import { Engine, type Persister, type SegmentData } from './engine.js';
import { lockDataDir } from './lock.js';
import { StoreError, type Store } from './types.js';

/** `links.json` is segment 1 of collection links; `links.2.json` segment 2, and so on. */
const DATA_FILE = /^([a-z][a-z0-9_]{0,39})(?:\.([1-9]\d{0,5}))?\.json$/;
const CORRUPT_FILE = /\.json\.corrupt-/;
const FORMAT = 1;

interface FileData {
  collection: string;
  segment: number;
  format: number;
  records: object[];
  /** Pre-serialised records (not written as a field). */
  lines?: readonly string[];
}

export function segmentFileName(collection: string, segment: number): string {
  return segment === 1 ? `${collection}.json` : `${collection}.${segment}.json`;
}

/** One record per line: small diffs, readable by a human, still one JSON document. */
function serialise(d: FileData): string {
  const head = JSON.stringify({ collection: d.collection, segment: d.segment, format: d.format });
  const lines = d.lines ?? d.records.map((r) => JSON.stringify(r));
  return `${head.slice(0, -1)},"records":[${lines.length ? '\n' + lines.join(',\n') + '\n' : ''}]}\n`;
}

class CorruptFile extends Error {}

/**
 * A lowdb adapter that makes each write durable: the whole document goes to a temp file that
 * is fsynced, then renamed over the data file. The directory fsync (which makes the rename
 * itself durable) is done once per flush by the persister, after every rename of the flush.
 */
export class DurableJsonFile implements Adapter<FileData> {
  readonly #tmp: string;

  constructor(
    readonly file: string,
    readonly fsync: boolean,
  ) {
    this.#tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  }

  async read(): Promise<FileData | null> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    let d: unknown;
    try {
      d = JSON.parse(text);
    } catch (err) {
      throw new CorruptFile((err as Error).message);
    }
    if (typeof d !== 'object' || d === null || !Array.isArray((d as FileData).records)) {
      throw new CorruptFile('not a devtoolbox data file (no "records" array)');
    }
    const bad = (d as FileData).records.findIndex((r) => typeof r !== 'object' || r === null || Array.isArray(r));
    if (bad >= 0) throw new CorruptFile(`record ${bad} is not an object`);
    return d as FileData;
  }

  async write(data: FileData): Promise<void> {
    const fh = await fsp.open(this.#tmp, 'w', 0o600);
    try {
      await fh.writeFile(serialise(data));
      if (this.fsync) await fh.datasync();
    } finally {
      await fh.close();
    }
    await fsp.rename(this.#tmp, this.file);
  }
}

export interface LowdbStoreOptions {
  log: Logger;
  /** Shown to a second process that finds the dir taken ('server', 'keys cli', …). */
  purpose?: string;
  /** fsync file and directory on every flush (default true; see docs/state.md). */
  fsync?: boolean;
}

/**
 * Opens DATA_DIR: takes the lock, reads every data file (a file that does not parse is moved
 * aside and the open fails), and returns the store. One lowdb instance per file, owned here.
 */
export async function openLowdbStore(dir: string, opts: LowdbStoreOptions): Promise<Store> {
  const fsync = opts.fsync ?? true;
  fs.mkdirSync(dir, { recursive: true });
  const release = await lockDataDir(dir, opts.purpose ?? 'server');
  try {
    const files = new Map<string, Low<FileData>>();
    const lowFor = (collection: string, segment: number): Low<FileData> => {
      const name = segmentFileName(collection, segment);
      let low = files.get(name);
      if (!low) {
        low = new Low<FileData>(new DurableJsonFile(path.join(dir, name), fsync), { collection, segment, format: FORMAT, records: [] });
        files.set(name, low);
      }
      return low;
    };

    const names = fs.readdirSync(dir);
    const kept = names.filter((n) => CORRUPT_FILE.test(n));
    if (kept.length > 0) {
      throw new StoreError(
        'CORRUPT',
        `DATA_DIR ${dir} holds data kept aside after a failed start-up: ${kept.join(', ')}. ` +
          'Repair it and rename it back (without the .corrupt-… suffix), or move it out of DATA_DIR to start without it.',
      );
    }
    const loaded = new Map<string, Map<number, object[]>>();
    for (const name of names.sort()) {
      if (/^\..*\.json\.tmp$/.test(name)) {
        // A temp file from a flush that never reached its rename: it was never acknowledged.
        fs.rmSync(path.join(dir, name), { force: true, recursive: true });
        continue;
      }
      const m = DATA_FILE.exec(name);
      if (!m) continue;
      const collection = m[1]!;
      const segment = m[2] ? Number(m[2]) : 1;
      const low = lowFor(collection, segment);
      try {
        await low.read();
      } catch (err) {
        if (!(err instanceof CorruptFile)) throw err;
        const aside = `${name}.corrupt-${new Date().toISOString().replace(/[:.]/g, '-')}`;
        fs.renameSync(path.join(dir, name), path.join(dir, aside));
        throw new StoreError(
          'CORRUPT',
          `DATA_DIR ${dir}: ${name} does not parse (${err.message}). It was kept aside as ${aside}; ` +
            'the server will not start without it. Repair it and rename it back to ' +
            `${name}, or move it out of DATA_DIR to start without its records.`,
        );
      }
      let perColl = loaded.get(collection);
      if (!perColl) loaded.set(collection, (perColl = new Map()));
      perColl.set(segment, low.data.records);
    }

    let dirFd: fs.promises.FileHandle | undefined;
    const persister: Persister = {
      async write(batch: SegmentData[]) {
        // allSettled, not all: the flush must not end while another file's write is still in
        // flight, or the next flush would race it on the same temp file.
        const results = await Promise.allSettled(
          batch.map(async (s) => {
            const low = lowFor(s.collection, s.segment);
            low.data = { collection: s.collection, segment: s.segment, format: FORMAT, records: s.records as object[], lines: s.lines };
            await low.write();
          }),
        );
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed) throw failed.reason;
        if (fsync) {
          dirFd ??= await fsp.open(dir, 'r');
          await dirFd.sync();
        }
      },
      async close() {
        await dirFd?.close();
        dirFd = undefined;
      },
    };
    return new Engine({
      kind: 'lowdb',
      persister,
      loaded,
      onFlushError: (err) => opts.log.error('store: flush failed; the changes stay in memory and will be retried', err),
      onClose: release,
    });
  } catch (err) {
    await release();
    throw err;
  }
}
