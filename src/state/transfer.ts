import { once } from 'node:events';
import readline from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { API_KEYS, keysChanged, type ApiKeyRecord } from '../auth/keys.js';
import type { Logger } from '../log.js';
import { checkCollectionDef, type AnyCollectionDef, type CollectionDef, type Store } from './types.js';

/**
 * Streaming export and import of every record as JSON lines, for moving a data dir (or, with
 * another adapter, a backend) elsewhere. The file:
 *
 *   {"devtoolbox":"export","format":1,"exportedAt":"…"}
 *   {"collection":"links","key":"code","segmentSize":1000,"count":2}
 *   {"collection":"links","record":{"code":"abc",…}}
 *   {"collection":"links","record":{"code":"abd",…}}
 *   {"end":true,"records":2}
 *
 * Records go in id order, one page at a time, so neither side holds more than a page beyond
 * what the store itself holds. The last line lets an import tell a complete file from a cut one.
 */
export const EXPORT_FORMAT = 1;

export interface TransferProgress {
  /** Records done so far, all collections together. */
  records: number;
  /** Records to do, when known (export). */
  total?: number;
  /** Records per second since the start. */
  perSecond: number;
  collection: string;
  done: boolean;
}

export interface TransferOptions {
  /** Called about once a second and once at the end. */
  onProgress?: (p: TransferProgress) => void;
  /** Records per page (export) or per write batch (import). */
  batchSize?: number;
}

export interface TransferResult {
  records: number;
  collections: number;
}

/** An export or import that cannot proceed; the message is for the operator. */
export class TransferError extends Error {
  override readonly name = 'TransferError';
}

function progressReporter(onProgress: TransferOptions['onProgress'], total?: number) {
  const started = performance.now();
  let last = started;
  return (records: number, collection: string, done = false) => {
    const now = performance.now();
    if (!onProgress || (!done && now - last < 1000)) return;
    last = now;
    const perSecond = Math.round(records / Math.max((now - started) / 1000, 1e-3));
    onProgress({ records, ...(total === undefined ? {} : { total }), perSecond, collection, done });
  };
}

/**
 * Writes every record of `store` to `out` (not closed here). `known`: definitions for
 * collections whose storage does not describe itself (files written before the header said
 * their key).
 */
export async function exportStore(
  store: Store,
  out: Writable,
  opts: TransferOptions & { known?: readonly AnyCollectionDef[] } = {},
): Promise<TransferResult> {
  const pageSize = opts.batchSize ?? 2000;
  const collections = await store.listCollections(opts.known);
  const total = collections.reduce((n, c) => n + c.count, 0);
  const report = progressReporter(opts.onProgress, total);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  await write(JSON.stringify({ devtoolbox: 'export', format: EXPORT_FORMAT, exportedAt: new Date().toISOString() }) + '\n');
  let records = 0;
  for (const { def, count } of collections) {
    const head = { collection: def.name, key: def.key, ...(def.segmentSize ? { segmentSize: def.segmentSize } : {}), count };
    await write(JSON.stringify(head) + '\n');
    const prefix = `{"collection":${JSON.stringify(def.name)},"record":`;
    let after: string | undefined;
    for (;;) {
      const page = await store.scan(def.name, { after, limit: pageSize });
      if (page.length === 0) break;
      let chunk = '';
      for (const r of page) chunk += `${prefix}${r.json}}\n`;
      await write(chunk);
      records += page.length;
      after = page[page.length - 1]!.id;
      report(records, def.name);
    }
  }
  await write(JSON.stringify({ end: true, records }) + '\n');
  report(records, collections[collections.length - 1]?.def.name ?? '', true);
  return { records, collections: collections.length };
}

type Line = { devtoolbox?: unknown; format?: unknown; collection?: unknown; key?: unknown; segmentSize?: unknown; record?: unknown; end?: unknown; records?: unknown };

/**
 * Reads an export from `input` into `store`. Refuses a store that holds any record unless
 * `merge` (then records are inserted or replaced by id, so importing the same file twice
 * changes nothing). Each batch is durable before the next is read; an import cut short can be
 * run again with `merge`. `known`: definitions for collections this build defines, opened with
 * them first, so that their indexes are built as the records come (and the file store's close
 * writes each one's load checkpoint: the first start-up after an import reads no record).
 */
export async function importStore(store: Store, input: Readable, opts: TransferOptions & { merge?: boolean; known?: readonly AnyCollectionDef[] } = {}): Promise<TransferResult> {
  const batchSize = opts.batchSize ?? 5000;
  if (!opts.merge) {
    const held = (await store.listCollections()).filter((c) => c.count > 0);
    if (held.length > 0) {
      throw new TransferError(
        `the target store is not empty (${held.map((c) => `${c.def.name}: ${c.count}`).join(', ')}); ` +
          'import into an empty one, or merge (insert or replace by id)',
      );
    }
  }
  for (const def of opts.known ?? []) store.collection(def as CollectionDef<object>);
  const report = progressReporter(opts.onProgress);
  const defs = new Map<string, AnyCollectionDef>();
  let batch: object[] = [];
  let batchDef: AnyCollectionDef | undefined;
  let records = 0;
  let lineNo = 0;
  let header = false;
  let ended: number | undefined;
  const fail = (msg: string): never => {
    throw new TransferError(`line ${lineNo}: ${msg}`);
  };
  const flushBatch = async () => {
    if (!batchDef || batch.length === 0) return;
    // Key records: the keys they replace and the keys they bring get a new generation once they
    // are written, so no instance goes on using a cached copy of a replaced key (issue 37).
    const keys = batchDef.name !== API_KEYS.name ? undefined : store.windows ? await keyIdsReplaced(store, batch) : [];
    await store.putMany(batchDef, batch);
    if (keys) await keysChanged(store, [...keys, ...batch.flatMap((r) => keyIdOf(r))]);
    records += batch.length;
    batch = [];
    report(records, batchDef.name);
  };
  const lines = readline.createInterface({ input, crlfDelay: Infinity });
  for await (const text of lines) {
    lineNo++;
    if (text.trim() === '') continue;
    if (ended !== undefined) fail('data after the end line');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      fail(`not JSON (${(err as Error).message})`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) fail('not a JSON object');
    const line = parsed as Line;
    if (!header) {
      if (line.devtoolbox !== 'export') fail('not a devtoolbox export (the first line names none)');
      if (line.format !== EXPORT_FORMAT) fail(`export format ${String(line.format)} is not supported (expected ${EXPORT_FORMAT})`);
      header = true;
      continue;
    }
    if (line.end === true) {
      await flushBatch();
      ended = typeof line.records === 'number' ? line.records : -1;
      continue;
    }
    const name = typeof line.collection === 'string' ? line.collection : fail('no "collection"');
    if (line.record === undefined) {
      let def: AnyCollectionDef;
      try {
        def = checkCollectionDef({ name, key: line.key as string, ...(line.segmentSize === undefined ? {} : { segmentSize: line.segmentSize as number }) });
      } catch (err) {
        fail((err as Error).message);
      }
      defs.set(def!.name, def!);
      continue;
    }
    const def = defs.get(name) ?? fail(`a record of "${name}" before its collection line`);
    const rec = line.record;
    if (typeof rec !== 'object' || rec === null || Array.isArray(rec)) fail('the record is not an object');
    const id = (rec as Record<string, unknown>)[def.key];
    if (typeof id !== 'string' || id === '') fail(`the record has no "${def.key}"`);
    if (batchDef !== def) await flushBatch();
    batchDef = def;
    batch.push(rec as object);
    if (batch.length >= batchSize) await flushBatch();
  }
  await flushBatch();
  await store.flush();
  if (!header) throw new TransferError('the input is empty: not a devtoolbox export');
  if (ended === undefined) throw new TransferError(`the export is cut short (no end line after line ${lineNo}); the ${records} records read were imported — import the complete file with merge`);
  if (ended >= 0 && ended !== records) throw new TransferError(`the end line counts ${ended} records but ${records} were read`);
  report(records, batchDef?.name ?? '', true);
  return { records, collections: defs.size };
}

/** The key ids of the stored key records that `records` (key records by e-mail) will replace. */
async function keyIdsReplaced(store: Store, records: readonly object[]): Promise<string[]> {
  const coll = store.collection(API_KEYS);
  const held = await Promise.all(records.map((r) => coll.get(String((r as Partial<ApiKeyRecord>).email))));
  return held.flatMap((rec) => (rec ? [rec.key_id] : []));
}

function keyIdOf(record: object): string[] {
  const id = (record as Partial<ApiKeyRecord>).key_id;
  return typeof id === 'string' ? [id] : [];
}
