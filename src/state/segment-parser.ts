import { Worker } from 'node:worker_threads';
import { moduleWorker } from '../lib/worker-url.js';
import type { ParsedSegment } from './segment-parse.js';
import type { AnyCollectionDef } from './types.js';

export interface ParseRequest {
  seq: number;
  file: string;
  def: Pick<AnyCollectionDef, 'name' | 'key'>;
  fields: readonly string[];
}

export type ParseReply = { seq: number; parsed: ParsedSegment } | { seq: number; corrupt: string } | { seq: number; failed: string };

/** A worker that could not parse (it failed to start, died, or could not read the file): parse it here instead. */
export class ParserUnavailable extends Error {}

/** The worker stops when it has had nothing to do for this long (loads come at start-up). */
const IDLE_MS = 200;

/**
 * Reads and parses data files in one worker thread while the main thread builds the tables:
 * at start-up the two run side by side (issue 18: 1M links ready in seconds, not ten). Started
 * on first use, stopped when idle. Any failure of the worker itself rejects with
 * ParserUnavailable, and the loader then parses on the main thread as before.
 */
export class SegmentParser {
  /** Workers started in this process so far (tests read it). */
  static started = 0;
  #worker: Worker | undefined;
  readonly #pending = new Map<number, { resolve(p: ParsedSegment | { corrupt: string }): void; reject(e: Error): void }>();
  #seq = 0;
  #idle: NodeJS.Timeout | undefined;
  #closed = false;

  /** The parsed file, `{ corrupt }` for a file that cannot be loaded, or ParserUnavailable. */
  parse(file: string, def: Pick<AnyCollectionDef, 'name' | 'key'>, fields: readonly string[]): Promise<ParsedSegment | { corrupt: string }> {
    if (this.#closed) return Promise.reject(new ParserUnavailable('the store is closing'));
    clearTimeout(this.#idle);
    let worker: Worker;
    try {
      worker = this.#worker ?? this.#start();
    } catch (err) {
      return Promise.reject(new ParserUnavailable(String(err)));
    }
    const seq = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#pending.set(seq, { resolve, reject });
      worker.postMessage({ seq, file, def: { name: def.name, key: def.key }, fields } satisfies ParseRequest);
    });
  }

  #start(): Worker {
    const entry = moduleWorker(import.meta.url, 'segment-worker');
    const worker = new Worker(entry.url, { execArgv: entry.execArgv });
    SegmentParser.started++;
    worker.on('message', (m: ParseReply) => {
      const p = this.#pending.get(m.seq);
      if (!p) return;
      this.#pending.delete(m.seq);
      if ('parsed' in m) p.resolve(m.parsed);
      else if ('corrupt' in m) p.resolve({ corrupt: m.corrupt });
      else p.reject(new ParserUnavailable(m.failed));
      if (this.#pending.size === 0) {
        this.#idle = setTimeout(() => this.#stop(), IDLE_MS);
        this.#idle.unref();
      }
    });
    const gone = (why: string) => {
      if (this.#worker !== worker) return;
      this.#worker = undefined;
      for (const p of this.#pending.values()) p.reject(new ParserUnavailable(why));
      this.#pending.clear();
    };
    worker.on('error', (err) => gone(String(err)));
    worker.on('exit', (code) => gone(`the load worker exited (${code})`));
    this.#worker = worker;
    return worker;
  }

  #stop(): void {
    const w = this.#worker;
    if (!w || this.#pending.size > 0) return;
    this.#worker = undefined;
    void w.terminate();
  }

  /** Stops the worker; parses in flight reject with ParserUnavailable. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#idle);
    const w = this.#worker;
    this.#worker = undefined;
    for (const p of this.#pending.values()) p.reject(new ParserUnavailable('the store is closing'));
    this.#pending.clear();
    await w?.terminate();
  }
}
