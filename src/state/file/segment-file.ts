import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

/**
 * The data file format: one JSON document per segment, one record per line.
 *
 *   {"collection":"links","segment":2,"format":1,"key":"code","segmentSize":1000,"records":[
 *   {"code":"abc","url":"…"},
 *   {"code":"abd","url":"…"}
 *   ]}
 *
 * Still one JSON document (a human or jq can read it), and a reader can take each line's text
 * as the record's JSON without a second serialisation. `key` (the id field) and `segmentSize`
 * let an export read a collection without its definition (files written before them lack them).
 */

/** `links.json` is segment 1 of collection links; `links.2.json` segment 2, and so on. */
export const DATA_FILE = /^([a-z][a-z0-9_]{0,39})(?:\.([1-9]\d{0,5}))?\.json$/;
export const CORRUPT_FILE = /\.json\.corrupt-/;
export const TEMP_FILE = /^\..*\.json\.tmp$/;
export const FORMAT = 1;

export function segmentFileName(collection: string, segment: number): string {
  return segment === 1 ? `${collection}.json` : `${collection}.${segment}.json`;
}

export interface SegmentText {
  collection: string;
  segment: number;
  key: string;
  segmentSize: number;
  /** Each record's JSON text. */
  lines: readonly string[];
}

export function serialise(d: SegmentText): string {
  const head = JSON.stringify({ collection: d.collection, segment: d.segment, format: FORMAT, key: d.key, segmentSize: d.segmentSize });
  return `${head.slice(0, -1)},"records":[${d.lines.length ? '\n' + d.lines.join(',\n') + '\n' : ''}]}\n`;
}

/** A data file that is not a well-formed data document. */
export class CorruptFile extends Error {}

const OPEN_RECORDS = '"records":[';

/** What a file's header says of its collection (nothing for files written before it did). */
export interface FileHeader {
  key?: string;
  segmentSize?: number;
}

function parseHeader(head: string): FileHeader {
  const at = head.indexOf(OPEN_RECORDS);
  if (at < 0) return {};
  try {
    const h = JSON.parse(head.slice(0, at + OPEN_RECORDS.length) + ']}') as { key?: unknown; segmentSize?: unknown };
    const out: FileHeader = {};
    if (typeof h.key === 'string' && h.key !== '') out.key = h.key;
    if (Number.isInteger(h.segmentSize) && (h.segmentSize as number) > 0) out.segmentSize = h.segmentSize as number;
    return out;
  } catch {
    return {};
  }
}

/**
 * The cheap check made at open for every file: it starts with `{` and ends with `}` (a
 * truncated or foreign file fails here), and the id field its header names. Every record is
 * parsed later, when its collection loads.
 */
export function checkFraming(file: string): FileHeader & { bytes: number } {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const head = Buffer.alloc(Math.min(size, 1024));
    fs.readSync(fd, head, 0, head.length, 0);
    const tail = Buffer.alloc(Math.min(size, 64));
    fs.readSync(fd, tail, 0, tail.length, size - tail.length);
    const first = head.toString('utf8').trimStart()[0];
    const last = tail.toString('utf8').trimEnd().slice(-1);
    if (first !== '{' || last !== '}') {
      throw new CorruptFile(size === 0 ? 'the file is empty' : first !== '{' ? 'not a devtoolbox data file (not a JSON object)' : 'the file is truncated (it does not end with "}")');
    }
    const nl = head.indexOf(10);
    return { ...parseHeader(head.toString('utf8', 0, nl < 0 ? head.length : nl)), bytes: size };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Where the records of a file in the one-record-per-line layout are: `[start, end)` byte
 * offsets of each record's JSON text, in pairs; undefined when the file is laid out otherwise
 * (e.g. edited by hand).
 */
export function lineOffsets(buf: Buffer): Uint32Array | undefined {
  const nl = buf.indexOf(10);
  if (nl < 0) return undefined;
  const head = buf.toString('utf8', 0, nl);
  if (head.endsWith(OPEN_RECORDS + ']}')) return buf.toString('utf8', nl + 1).trim() === '' ? new Uint32Array(0) : undefined;
  if (!head.endsWith(OPEN_RECORDS)) return undefined;
  const out: number[] = [];
  let pos = nl + 1;
  let last = false;
  for (;;) {
    const e = buf.indexOf(10, pos);
    const end = e < 0 ? buf.length : e;
    if (buf[pos] === 0x5d /* ] */) {
      return last && buf.toString('utf8', pos).trim() === ']}' ? Uint32Array.from(out) : undefined;
    }
    if (last || e < 0) return undefined;
    let stop = end;
    if (buf[stop - 1] === 0x0d /* \r */) stop--;
    if (buf[stop - 1] === 0x2c /* , */) stop--;
    else last = true;
    out.push(pos, stop);
    pos = end + 1;
  }
}

/** The records of any well-formed data document, re-serialised one per line. */
export function wholeDocument(buf: Buffer): string[] {
  let d: unknown;
  try {
    d = JSON.parse(buf.toString('utf8'));
  } catch (err) {
    throw new CorruptFile((err as Error).message);
  }
  if (typeof d !== 'object' || d === null || !Array.isArray((d as { records?: unknown }).records)) {
    throw new CorruptFile('not a devtoolbox data file (no "records" array)');
  }
  const records = (d as { records: unknown[] }).records;
  const bad = records.findIndex((r) => typeof r !== 'object' || r === null || Array.isArray(r));
  if (bad >= 0) throw new CorruptFile(`record ${bad} is not an object`);
  return records.map((r) => JSON.stringify(r));
}

/**
 * One data file written durably in two steps, so that a flush of several files either renames
 * all of them or (when writing fails: a full or failing disk) none: `write` puts the document in
 * `.<file>.tmp` and fsyncs it; `publish` renames it over the file. The directory fsync that
 * makes the renames durable is done once per flush by the store.
 */
export class DurableJsonFile {
  readonly tmp: string;

  constructor(
    readonly file: string,
    readonly fsync: boolean,
  ) {
    this.tmp = path.join(path.dirname(file), `.${path.basename(file)}.tmp`);
  }

  async write(text: string): Promise<void> {
    const fh = await fsp.open(this.tmp, 'w', 0o600);
    try {
      await fh.writeFile(text);
      if (this.fsync) await fh.datasync();
    } finally {
      await fh.close();
    }
  }

  async publish(): Promise<void> {
    await fsp.rename(this.tmp, this.file);
  }

  /** Drops the temp file of a write that will not be published. */
  async discard(): Promise<void> {
    await fsp.rm(this.tmp, { force: true }).catch(() => {});
  }
}
