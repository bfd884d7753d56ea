/**
 * The load checkpoint (issue 18): what a collection's load derives from its files — each
 * record's place in its file, its id's hash, and every index's keys in order — written beside
 * the data files when the store closes cleanly, so that the next start-up reads it instead of
 * reading every record again. It is an optimisation only, never a source of records: the data
 * files stay the truth, and a checkpoint is used only when it provably describes them.
 *
 *   .<collection>.checkpoint   one JSON header line, then a binary body:
 *     per data file (segment order): record offsets (u32 pairs), id hashes (u32)
 *     per index field: key lengths (u32), then the keys end to end (latin1, or UTF-16LE)
 *
 * The header names every data file with its size, modification time (ns) and inode as they
 * were when the checkpoint was written. At start-up it is used only if the collection's files
 * are exactly those (same segments, each with the same size, mtime and inode: any write of the
 * store renames a new file into place), its body matches its CRC-32, its counts agree, and the
 * collection's key and index fields are the ones it was written for. Otherwise the load reads
 * every record, as without it. A crash leaves no checkpoint newer than the files: the store
 * writes one only at a clean close, after the last flush, and any later write of a segment
 * changes that file's identity.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { endianness } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import type { ParsedSegment } from './parse-segment.js';
import { parseSegment } from './parse-segment.js';
import { segmentFileName } from './segment-file.js';
import type { Table } from './table.js';

const FORMAT = 1;
/** The body is the machine's own u32 layout: only little-endian machines write or read one. */
const USABLE = endianness() === 'LE';

/** [segment, size, mtime ns, inode, records] */
type FileEntry = [number, number, string, string, number];

interface Header {
  format: number;
  collection: string;
  key: string;
  segmentSize: number;
  fields: string[];
  files: FileEntry[];
  /** Per field: its keys' encoding. */
  latin1: boolean[];
  bytes: number;
  crc: number;
}

/** Checkpoints used and refused in this process (tests read them). */
export const checkpointStats = { used: 0, refused: 0, written: 0 };

export function checkpointFile(dir: string, collection: string): string {
  return path.join(dir, `.${collection}.checkpoint`);
}

/** A checkpoint's file names (never a data file: see DATA_FILE). */
export const CHECKPOINT_FILE = /^\.[a-z][a-z0-9_]{0,39}\.checkpoint(\.tmp)?$/;

function identity(st: fs.BigIntStats): [number, string, string] {
  return [Number(st.size), st.mtimeNs.toString(), st.ino.toString()];
}

/** A checkpoint whose header describes the files as they are (see checkpointHeader). */
export interface FoundCheckpoint {
  readonly dir: string;
  readonly header: Header;
  /** Where its body starts in the file. */
  readonly bodyAt: number;
}

/**
 * `collection`'s checkpoint if its header describes `files` (paths, in segment order) as they
 * are now; undefined otherwise. Reads the header line and stats each file: the body is read by
 * readBody, once checkpointFits says it was written for the collection's definition.
 */
export function checkpointHeader(dir: string, collection: string, segments: readonly number[], files: readonly string[]): FoundCheckpoint | undefined {
  if (!USABLE) return undefined;
  let fd: number;
  try {
    fd = fs.openSync(checkpointFile(dir, collection), 'r');
  } catch {
    return undefined;
  }
  try {
    const chunk = Buffer.alloc(64 * 1024);
    let head = Buffer.alloc(0);
    let nl = -1;
    while (nl < 0) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, head.length);
      if (n === 0) return refuse();
      const at = chunk.subarray(0, n).indexOf(10);
      head = Buffer.concat([head, chunk.subarray(0, at < 0 ? n : at)]);
      if (at >= 0) nl = head.length;
      if (head.length > 64 * 1024 * 1024) return refuse();
    }
    const h = JSON.parse(head.toString('utf8')) as Header;
    if (h.format !== FORMAT || h.collection !== collection || typeof h.key !== 'string' || !Array.isArray(h.fields) || !Number.isInteger(h.segmentSize)) return refuse();
    if (!Array.isArray(h.files) || h.files.length !== segments.length || !Array.isArray(h.latin1) || h.latin1.length !== h.fields.length) return refuse();
    for (let i = 0; i < segments.length; i++) {
      const e = h.files[i]!;
      if (e[0] !== segments[i]) return refuse();
      const [size, mtime, ino] = identity(fs.statSync(files[i]!, { bigint: true }));
      if (e[1] !== size || e[2] !== mtime || e[3] !== ino) return refuse();
    }
    return { dir, header: h, bodyAt: nl + 1 };
  } catch {
    return refuse();
  } finally {
    fs.closeSync(fd);
  }
}

/** Whether the checkpoint was written for a collection keyed by `key` with these index fields (in this order). */
export function checkpointFits(found: FoundCheckpoint, key: string, fields: readonly string[]): boolean {
  if (found.header.key === key && JSON.stringify(found.header.fields) === JSON.stringify(fields)) return true;
  refuse();
  return false;
}

function refuse(): undefined {
  checkpointStats.refused++;
  return undefined;
}

/** What the checkpoint's body gives the load. */
export interface CheckpointBody {
  /** Per data file, in segment order. */
  files: Array<{ size: number; offsets: Uint32Array; hashes: Uint32Array }>;
  /** Per index field, every key in order. */
  keys: string[][];
}

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/** Work between two turns of the event loop while the body is checked and decoded. */
const STEP_BYTES = 4 * 1024 * 1024;
const STEP_KEYS = 32 * 1024;

/** The body of a checkpoint whose header checkpointHeader accepted; undefined if it does not check out. */
export async function readBody({ dir, header, bodyAt }: FoundCheckpoint): Promise<CheckpointBody | undefined> {
  try {
    const all = await fsp.readFile(checkpointFile(dir, header.collection));
    const body = all.subarray(bodyAt);
    if (body.length !== header.bytes) return refuse();
    let crc = 0;
    for (let at = 0; at < body.length; at += STEP_BYTES) {
      crc = zlib.crc32(body.subarray(at, at + STEP_BYTES), crc);
      await yieldTurn();
    }
    if (crc !== header.crc) return refuse();
    let at = 0;
    const u32 = (n: number): Uint32Array => {
      if (at + 4 * n > body.length) throw new RangeError('short body');
      const out = new Uint32Array(body.buffer.slice(body.byteOffset + at, body.byteOffset + at + 4 * n));
      at += 4 * n;
      return out;
    };
    let total = 0;
    const files = header.files.map(([, size, , , count]) => {
      total += count;
      return { size, offsets: u32(2 * count), hashes: u32(count) };
    });
    const keys: string[][] = [];
    for (const latin1 of header.latin1) {
      const lengths = u32(total);
      const width = latin1 ? 1 : 2;
      const list = new Array<string>(total);
      // A piece of STEP_KEYS keys decoded at a time (decoding 30 MB in one go held the loop ≈ 0.1 s).
      for (let j = 0; j < total; ) {
        const end = Math.min(total, j + STEP_KEYS);
        let chars = 0;
        for (let k = j; k < end; k++) chars += lengths[k]!;
        if (at + width * chars > body.length) return refuse();
        const text = body.toString(latin1 ? 'latin1' : 'utf16le', at, at + width * chars);
        at += width * chars;
        for (let p = 0; j < end; j++) list[j] = text.slice(p, (p += lengths[j]!));
        await yieldTurn();
      }
      keys.push(list);
    }
    if (at !== body.length) return refuse();
    checkpointStats.used++;
    return { files, keys };
  } catch {
    return refuse();
  }
}

/** File i's records as the load takes them, from its bytes and the checkpoint. */
export function parsedFromCheckpoint(buf: Buffer, file: CheckpointBody['files'][number]): ParsedSegment | undefined {
  if (buf.length !== file.size) return undefined;
  return { buf, offsets: file.offsets, hashes: file.hashes };
}

const bytesOf = (a: Uint32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

/**
 * Writes `table`'s checkpoint if its files hold at least `minBytes`, or removes a stale one
 * when it is smaller or its state cannot be described (a change not durable, a file laid out
 * by hand, a count that does not agree).
 * Call it only once every change is durable and nothing writes any more (the store's close).
 */
export async function writeCheckpoint(dir: string, table: Table, opts: { fsync: boolean; minBytes: number }): Promise<void> {
  const name = table.def.name;
  const file = checkpointFile(dir, name);
  const tmp = `${file}.tmp`;
  const drop = async () => {
    await fsp.rm(file, { force: true }).catch(() => {});
  };
  // Not loaded (a close during start-up): a checkpoint already there stays as valid as it was.
  if (!USABLE || table.loading || table.failed || table.raw) return;
  if (table.pending.size > 0) return drop();
  const fields = [...table.indexes.keys()];
  const entries: FileEntry[] = [];
  const parts: Buffer[] = [];
  let total = 0;
  for (const seg of table.segs) {
    const dataFile = path.join(dir, segmentFileName(name, seg.no));
    let st: fs.BigIntStats;
    let offsets: Uint32Array;
    let hashes: Uint32Array;
    const loaded = seg.asLoaded();
    if (loaded) {
      try {
        st = fs.statSync(dataFile, { bigint: true });
      } catch {
        return drop();
      }
      ({ at: offsets, hashes } = loaded);
    } else {
      // Written since the load (or never loaded from a file): what is on disk now.
      let buf: Buffer;
      try {
        const fd = fs.openSync(dataFile, 'r');
        try {
          st = fs.fstatSync(fd, { bigint: true });
          buf = fs.readFileSync(fd);
        } finally {
          fs.closeSync(fd);
        }
      } catch {
        if (seg.size === 0) continue; // no file for an empty segment
        return drop();
      }
      let p: ParsedSegment;
      try {
        p = parseSegment(buf, table.def, []);
      } catch {
        return drop();
      }
      if (!p.buf || p.repeated) return drop();
      offsets = p.offsets!;
      hashes = p.hashes;
    }
    if (hashes.length !== seg.size) return drop();
    const [size, mtime, ino] = identity(st);
    entries.push([seg.no, size, mtime, ino, hashes.length]);
    parts.push(bytesOf(offsets), bytesOf(hashes));
    total += hashes.length;
    await yieldTurn();
  }
  if (total !== table.size) return drop();
  // A small collection loads in a moment without one.
  if (entries.reduce((n, e) => n + e[1], 0) < opts.minBytes) return drop();
  const latin1: boolean[] = [];
  for (const f of fields) {
    const list = [...table.indexes.get(f)!.keys()];
    if (list.length !== total) return drop();
    const text = list.join('');
    const narrow = !/[^\x00-\xff]/.test(text);
    latin1.push(narrow);
    parts.push(bytesOf(Uint32Array.from(list, (k) => k.length)), Buffer.from(text, narrow ? 'latin1' : 'utf16le'));
    await yieldTurn();
  }
  const body = Buffer.concat(parts);
  const header: Header = { format: FORMAT, collection: name, key: table.def.key, segmentSize: table.segmentSize, fields, files: entries, latin1, bytes: body.length, crc: zlib.crc32(body) };
  try {
    const fh = await fsp.open(tmp, 'w', 0o600);
    try {
      // Two writes from the file's position on, not one of a copy of the body with the header before it.
      await fh.writeFile(JSON.stringify(header) + '\n');
      await fh.writeFile(body);
      if (opts.fsync) await fh.datasync();
    } finally {
      await fh.close();
    }
    await fsp.rename(tmp, file);
    checkpointStats.written++;
  } catch {
    await fsp.rm(tmp, { force: true }).catch(() => {});
    await drop();
  }
}
