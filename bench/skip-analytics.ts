// A preload for bench servers only (issue 32): what a redirect costs with a part of its visit
// analytics taken out or replaced, in the same build. Unset: nothing changes.
// - SKIP_ANALYTICS=writes: the file store's link_days adds answer at once and write nothing (the
//   visits are still classified, counted in memory and flushed: only the store's work goes).
// - SKIP_ANALYTICS=memory: those adds kept as objects in a Map (caps applied as the store applies
//   them), each also a delta line appended to a file every 500 ms: a naive counters store.
// - SKIP_ANALYTICS=slab: the same with the counts off the JS heap's objects: an open-addressing
//   table of id hashes over typed arrays, each record a block of SLAB_FIELDS (field number,
//   count) pairs (no caps, nothing past SLAB_FIELDS): a prototype's floor.
// - SKIP_ANALYTICS=worker: a visit's counting moved off the main thread (see below).
// - SKIP_ANALYTICS=all: a visit records nothing.
// None of `memory`, `slab` and `worker` is ever read back: they measure a write path, not a store.
// Every variant changes the main thread's counting: it sets ANALYTICS_THREAD=main (the session-27
// analytics thread, the default since, is the `worker` prototype built in full).
// `SERVER_ARGS='--import ./bench/skip-analytics.ts' SKIP_ANALYTICS=writes node --import tsx
// bench/links-steady.ts`; bench/link-visits.ts imports it itself (file store only).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { applyDeltas, applyMax, FULFILLED } from '../src/state/counters.js';
import { EngineCollection } from '../src/state/file/collection.js';
import { idHash } from '../src/state/file/id-directory.js';
import type { AddItem, AddManyOptions } from '../src/state/types.js';
import { Worker } from 'node:worker_threads';
import { VisitAnalytics, type VisitHeaders } from '../src/tools/shortener/analytics.js';
import { LINK_DAYS, profileOf } from '../src/tools/shortener/analytics-counters.js';
import { referrerHost, UaCache } from '../src/tools/shortener/analytics-ua.js';

/** The `worker` variant's thread (CommonJS: an eval'd worker). */
const WORKER = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { sab, file, SLOT, SLOTS } = workerData;
const ends = new Int32Array(sab, 0, 2);
const view = new DataView(sab, 8);
const buf = Buffer.from(sab, 8);
const fd = fs.openSync(file, 'a');
let counts = new Map();
setInterval(() => {
  const written = Atomics.load(ends, 0);
  let read = Atomics.load(ends, 1);
  for (; read < written; read++) {
    const at = (read & (SLOTS - 1)) * SLOT;
    const key = buf.toString('latin1', at + 4, at + 4 + buf[at]) + '\\t' + view.getUint32(at + 52);
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  Atomics.store(ends, 1, read);
}, 5);
setInterval(() => {
  let text = '';
  for (const [key, n] of counts) text += key + '\\t' + n + '\\n';
  counts = new Map();
  if (text !== '') fs.writeSync(fd, text);
}, 500);
`;

type AddMany = (items: readonly AddItem<object>[], opts?: AddManyOptions) => Promise<PromiseSettledResult<void>[]>;

/** Replaces the file store's addMany of link_days with `apply` (called per item); other collections as before. */
function replaceDayAdds(apply: ((it: AddItem<object>, opts: AddManyOptions | undefined) => void) | undefined): void {
  const addMany = EngineCollection.prototype.addMany as AddMany;
  EngineCollection.prototype.addMany = function (this: EngineCollection<object>, items: readonly AddItem<object>[], opts?: AddManyOptions) {
    if (this.name !== LINK_DAYS.name) return addMany.call(this, items, opts);
    if (apply) for (const it of items) apply(it, opts);
    return Promise.resolve(items.map(() => FULFILLED));
  };
}

/** Where a variant's log goes: the server's DATA_DIR (the bench removes it), or else a temporary directory removed at exit. */
function logDir(): string {
  const dir = process.env.DATA_DIR;
  if (dir !== undefined) return dir;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-skip-analytics-'));
  process.once('exit', () => fs.rmSync(tmp, { recursive: true, force: true }));
  return tmp;
}

/**
 * A delta line per add (the id, the deltas — one JSON per frozen profile object — and the
 * maxima), appended every 500 ms to a file in logDir().
 */
function deltaLog(): (it: AddItem<object>) => void {
  const fd = fs.openSync(path.join(logDir(), 'skip-analytics-deltas.log'), 'a');
  const fragments = new WeakMap<object, string>();
  let text = '';
  setInterval(() => {
    if (text === '') return;
    const buf = Buffer.from(text);
    text = '';
    fs.write(fd, buf, () => {});
  }, 500).unref();
  return (it) => {
    let f = fragments.get(it.deltas);
    if (f === undefined) fragments.set(it.deltas, (f = JSON.stringify(it.deltas)));
    text += `${JSON.stringify(it.id)}\t${f}${it.max ? `\t${JSON.stringify(it.max)}` : ''}\n`;
  };
}

/** The slab: records found by idHash in an open-addressing table, their counts in typed arrays. */
const SLAB_FIELDS = 16;
function slab(): (it: AddItem<object>) => void {
  const cap = 1 << 22;
  const slots = new Int32Array(cap).fill(-1);
  const ids: string[] = [];
  let fieldNo = new Int32Array(1024 * SLAB_FIELDS);
  let counts = new Float64Array(1024 * SLAB_FIELDS);
  const names = new Map<string, number>();
  const recordOf = (id: string): number => {
    const mask = cap - 1;
    let i = idHash(id) & mask;
    for (let r = slots[i]!; r >= 0; i = (i + 1) & mask, r = slots[i]!) if (ids[r] === id) return r;
    const r = ids.length;
    // Never full: a full table's probe above would not end.
    if (2 * (r + 1) > cap) throw new Error(`skip-analytics slab: more than ${cap / 2} link-days`);
    ids.push(id);
    slots[i] = r;
    if ((r + 1) * SLAB_FIELDS > counts.length) {
      const c = new Float64Array(counts.length * 2);
      c.set(counts);
      counts = c;
      const f = new Int32Array(fieldNo.length * 2);
      f.set(fieldNo);
      fieldNo = f;
    }
    return r;
  };
  const add = (r: number, field: string, n: number, asMax: boolean) => {
    let no = names.get(field);
    if (no === undefined) names.set(field, (no = names.size + 1));
    for (let k = r * SLAB_FIELDS; k < (r + 1) * SLAB_FIELDS; k++) {
      if (fieldNo[k] === no) {
        counts[k] = asMax ? Math.max(counts[k]!, n) : counts[k]! + n;
        return;
      }
      if (fieldNo[k] === 0) {
        fieldNo[k] = no;
        counts[k] = n;
        return;
      }
    }
  };
  return (it) => {
    const r = recordOf(it.id);
    for (const f in it.deltas) add(r, f, it.deltas[f]!, false);
    if (it.max) for (const f in it.max) add(r, f, it.max[f]!, true);
  };
}

const skip = process.env.SKIP_ANALYTICS;
// The variants replace the main thread's counting (VisitAnalytics): the server must count there.
if (skip !== undefined && skip !== '') process.env.ANALYTICS_THREAD = 'main';
if (skip === 'writes') replaceDayAdds(undefined);
else if (skip === 'memory') {
  const counts = new Map<string, Record<string, number>>();
  const log = deltaLog();
  replaceDayAdds((it, opts) => {
    let rec = counts.get(it.id);
    if (rec === undefined) counts.set(it.id, (rec = Object.create(null) as Record<string, number>));
    applyDeltas(rec, Object.entries(it.deltas), opts?.caps ?? []);
    if (it.max) applyMax(rec, Object.entries(it.max));
    log(it);
  });
} else if (skip === 'slab') {
  const count = slab();
  const log = deltaLog();
  replaceDayAdds((it) => {
    count(it);
    log(it);
  });
} else if (skip === 'worker') {
  // The visit classified here (User-Agent families, referrer host, hour: its profile, numbered),
  // its code and profile number put in a ring of slots in shared memory; a worker thread drains
  // the ring every 5 ms, counts per code and profile, and appends the counts as lines every
  // 500 ms. The main thread keeps no per-link-day state at all.
  const SLOT = 64;
  const SLOTS = 1 << 16;
  const CODE_MAX = 48;
  const sab = new SharedArrayBuffer(8 + SLOT * SLOTS);
  // [written, read]: visits put in and taken out so far (a bench's visits stay far below 2^31).
  const ends = new Int32Array(sab, 0, 2);
  const bytes = new Uint8Array(sab, 8);
  const view = new DataView(sab, 8);
  const worker = new Worker(WORKER, { eval: true, workerData: { sab, file: path.join(logDir(), 'skip-analytics-worker.log'), SLOT, SLOTS } });
  worker.unref();
  const ua = new UaCache();
  const numbers = new Map<object, number>();
  let written = 0;
  let dropped = 0;
  VisitAnalytics.prototype.record = function (code: string, headers: VisitHeaders): void {
    const info = ua.info(headers.userAgent);
    const hour = Math.floor(Date.now() / 3_600_000) % 24;
    const p = profileOf(info, info.bot ? '' : referrerHost(headers.referer), hour);
    let no = numbers.get(p);
    if (no === undefined) numbers.set(p, (no = numbers.size + 1));
    if (written - Atomics.load(ends, 1) >= SLOTS || code.length > CODE_MAX) {
      dropped++;
      return;
    }
    const at = (written & (SLOTS - 1)) * SLOT;
    bytes[at] = code.length;
    for (let i = 0; i < code.length; i++) bytes[at + 4 + i] = code.charCodeAt(i);
    view.setUint32(at + 4 + CODE_MAX, no);
    Atomics.store(ends, 0, ++written);
  };
  process.once('exit', () => dropped > 0 && process.stderr.write(`skip-analytics worker: ${dropped} visits dropped (ring full)\n`));
} else if (skip === 'all') VisitAnalytics.prototype.record = () => {};
else if (skip !== undefined && skip !== '') throw new Error(`SKIP_ANALYTICS: ${skip} is none of writes, memory, slab, worker, all`);
