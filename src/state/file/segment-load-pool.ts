import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { deferred, type Deferred } from '../../lib/deferred.js';
import { moduleWorker } from '../../lib/worker-url.js';
import type { ParsedSegment } from './parse-segment.js';
import type { AnyCollectionDef } from '../types.js';

/**
 * Reads and parses `files` in order; then sends each field's keys of all of them, sorted, in
 * chunks. `i` in replies is the index in `files`.
 */
export interface LoadRequest {
  seq: number;
  files: readonly string[];
  def: Pick<AnyCollectionDef, 'name' | 'key'>;
  fields: readonly string[];
}

/**
 * Per file (`i`): parsed (its index keys kept back for the sorted list), corrupt, or failed (a
 * read error: the worker stops there). Last, the sorted keys of each field, a chunk at a time
 * (one message of 500k strings held the main thread for ≈ 0.2 s while it was decoded), and the
 * end.
 */
export type LoadReply =
  | { seq: number; i: number; parsed: ParsedSegment }
  | { seq: number; i: number; corrupt: string }
  | { seq: number; i: number; failed: string }
  | { seq: number; field: number; keys: string[] }
  | { seq: number; end: true };

/**
 * Sorted keys per message: decoding one takes the main thread a few ms. The worker sends the
 * next when asked (LoadMore): Node hands a port's queued messages over in one go, so chunks
 * sent all at once held the main thread for 0.15-0.3 s; one at a time, the event loop turns
 * between two.
 */
export const KEYS_CHUNK = 16_384;

/** The main thread has taken a chunk of sorted keys: the next one, please. */
export interface LoadMore {
  seq: number;
  more: true;
}

/** The worker could not (it failed to start, died, or could not read a file): parse here instead. */
export class LoadPoolUnavailable extends Error {}

/** What the workers say of one collection's files, as they read them. */
export interface LoadSession {
  /**
   * File `i`: parsed, without index keys (they come sorted in `keys`), or `{ corrupt }`.
   * Rejects with LoadPoolUnavailable when its worker cannot give it (nor any later file of its share).
   */
  file(i: number): Promise<ParsedSegment | { corrupt: string }>;
  /**
   * Per field asked, the keys of every file's records as sorted lists (code-unit order), one
   * per worker, to merge (see mergeInSlices); undefined if the workers did not read them all.
   */
  readonly keys: Promise<string[][][] | undefined>;
}

/** A deferred value of the load, each awaited in its turn: one never asked for must not go unhandled. */
function handledDeferred<T>(): Deferred<T> {
  const d = deferred<T>();
  d.promise.catch(() => {});
  return d;
}

interface Part {
  /** The files this worker reads, as indices into the session's list. */
  readonly files: readonly number[];
  /** Per field, the sorted keys received so far. */
  readonly keys: string[][];
  failed?: boolean;
  done: boolean;
}

interface Session {
  files: Array<Deferred<ParsedSegment | { corrupt: string }>>;
  /** One per worker: file i goes to part i % parts.length. */
  parts: Part[];
  keys: Deferred<string[][][] | undefined>;
}

/** The worker stops when it has had nothing to do for this long (loads come at start-up). */
const IDLE_MS = 200;

/**
 * Load workers: two where there are at least two cores. Parsing (JSON.parse of every record)
 * is the longest part of a large load, and the main thread, which adds the records to the
 * table, waits for it with one worker; a second one halves that and sorts half the keys.
 */
export const LOAD_WORKERS = Math.max(1, Math.min(2, availableParallelism()));

/**
 * Reads and parses data files in worker threads while the main thread builds the tables: at
 * start-up they run side by side (issue 18). The workers read a collection's files as fast as
 * they can, each every n-th file (their bytes are what the table keeps, so running ahead costs
 * no extra memory in the end), and each sorts the index keys of its files; the loader
 * merges the sorted lists. Started on first use (or by warm()), stopped when idle. Any failure of a worker
 * itself is LoadPoolUnavailable for the files it has not given, and the loader parses those on the
 * main thread as before.
 */
export class SegmentLoadPool {
  /** Workers started in this process so far (tests read it). */
  static started = 0;
  readonly #workers: Array<Worker | undefined>;
  readonly #sessions = new Map<number, Session>();
  #seq = 0;
  #idle: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(workers = LOAD_WORKERS) {
    this.#workers = Array.from({ length: workers }, () => undefined);
  }

  /**
   * Starts the workers ahead of a load (each takes ≈ 50 ms to boot, which then overlaps what the
   * main thread does before it asks); they stop again if no load comes.
   */
  warm(): void {
    if (this.#closed) return;
    try {
      for (let w = 0; w < this.#workers.length; w++) this.#workers[w] ??= this.#start(w);
    } catch {
      return; // the load will find out and parse on the main thread
    }
    if (this.#sessions.size === 0) {
      clearTimeout(this.#idle);
      this.#idle = setTimeout(() => this.#stop(), IDLE_MS);
      this.#idle.unref();
    }
  }

  /** Starts reading `files`; see LoadSession. */
  load(files: readonly string[], def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): LoadSession {
    const n = Math.max(1, Math.min(this.#workers.length, files.length));
    const session: Session = {
      files: files.map(() => handledDeferred()),
      parts: Array.from({ length: n }, (_, w) => ({ files: files.map((_f, i) => i).filter((i) => i % n === w), keys: fields.map(() => []), done: false })),
      keys: handledDeferred(),
    };
    const view: LoadSession = { file: (i) => session.files[i]!.promise, keys: session.keys.promise };
    const seq = ++this.#seq;
    this.#sessions.set(seq, session);
    clearTimeout(this.#idle);
    for (let w = 0; w < n; w++) {
      const part = session.parts[w]!;
      if (this.#closed) {
        this.#partFailed(seq, session, part, 'the store is closing');
        continue;
      }
      let worker: Worker;
      try {
        worker = this.#workers[w] ?? this.#start(w);
      } catch (err) {
        this.#partFailed(seq, session, part, String(err));
        continue;
      }
      worker.postMessage({ seq, files: part.files.map((i) => files[i]!), def: { name: def.name, key: def.key }, fields } satisfies LoadRequest);
    }
    return view;
  }

  /** The part's files not given yet are LoadPoolUnavailable; the session then has no sorted keys. */
  #partFailed(seq: number, s: Session, part: Part, why: string, from = 0): void {
    for (const i of part.files.slice(from)) s.files[i]!.reject(new LoadPoolUnavailable(why));
    part.failed = true;
    this.#partDone(seq, s, part);
  }

  #partDone(seq: number, s: Session, part: Part): void {
    part.done = true;
    if (!s.parts.every((p) => p.done)) return;
    this.#sessions.delete(seq);
    s.keys.resolve(s.parts.some((p) => p.failed) ? undefined : s.parts[0]!.keys.map((_, f) => s.parts.map((p) => p.keys[f]!)));
    if (this.#sessions.size === 0) {
      this.#idle = setTimeout(() => this.#stop(), IDLE_MS);
      this.#idle.unref();
    }
  }

  #start(w: number): Worker {
    const entry = moduleWorker(import.meta.url, 'segment-load-worker');
    const worker = new Worker(entry.url, { execArgv: entry.execArgv });
    SegmentLoadPool.started++;
    worker.on('message', (m: LoadReply) => {
      const s = this.#sessions.get(m.seq);
      const part = s?.parts[w];
      if (!s || !part || part.done) return;
      if ('end' in m) this.#partDone(m.seq, s, part);
      else if ('keys' in m) {
        const into = part.keys[m.field]!;
        for (const k of m.keys) into.push(k);
        // Asked now: the next one is serialised while this one is stored, and comes as a message of its own.
        worker.postMessage({ seq: m.seq, more: true } satisfies LoadMore);
      } else if ('parsed' in m) s.files[part.files[m.i]!]!.resolve(m.parsed);
      else if ('corrupt' in m) {
        // The worker stops at a corrupt file (and the load will stop there).
        s.files[part.files[m.i]!]!.resolve({ corrupt: m.corrupt });
        this.#partFailed(m.seq, s, part, 'an earlier file is corrupt', m.i + 1);
      } else this.#partFailed(m.seq, s, part, m.failed, m.i);
    });
    const gone = (why: string) => {
      if (this.#workers[w] !== worker) return;
      this.#workers[w] = undefined;
      for (const [seq, s] of [...this.#sessions]) {
        const part = s.parts[w];
        if (part && !part.done) this.#partFailed(seq, s, part, why, 0);
      }
    };
    worker.on('error', (err) => gone(String(err)));
    worker.on('exit', (code) => gone(`the load worker exited (${code})`));
    this.#workers[w] = worker;
    return worker;
  }

  #stop(): void {
    if (this.#sessions.size > 0) return;
    for (let w = 0; w < this.#workers.length; w++) {
      const worker = this.#workers[w];
      this.#workers[w] = undefined;
      void worker?.terminate();
    }
  }

  /** Stops the workers; what they have not given yet is LoadPoolUnavailable. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idle);
    const workers = this.#workers.splice(0, this.#workers.length, ...this.#workers.map(() => undefined));
    for (const [seq, s] of [...this.#sessions]) for (const part of s.parts) if (!part.done) this.#partFailed(seq, s, part, 'the store is closing');
    await Promise.all(workers.map((w) => w?.terminate()));
  }
}
