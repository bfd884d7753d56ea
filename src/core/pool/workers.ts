/** The pool's worker threads: started, kept at their number, and retired when given up on. */
import { Worker } from 'node:worker_threads';
import type { RunMessage, WorkerData, WorkerMessage } from './protocol.js';

/** The longest close() waits for terminated workers to exit. */
export const DRAIN_LIMIT_MS = 5000;

/** One worker and what it is doing. */
export interface Slot<J> {
  worker: Worker;
  state: 'starting' | 'idle' | 'busy';
  job?: J;
  /** Set when the pool itself ended this worker (deadline, abort, close): its exit is expected. */
  retired?: boolean;
  /** The worker's 'error' event, read when it exits. */
  error?: unknown;
}

/** How to start a worker, and who hears what it does. */
export interface WorkersOptions<J> {
  size: number;
  url: URL;
  execArgv?: string[];
  data: WorkerData;
  maxOldGenerationSizeMb: number;
  onMessage(slot: Slot<J>, m: WorkerMessage): void;
  onMessageError(slot: Slot<J>, err: unknown): void;
  onExit(slot: Slot<J>): void;
}

/** A fixed number of workers; `closed` stops replacing them. */
export class Workers<J> {
  readonly slots: Array<Slot<J>> = [];
  closed = false;
  /** Terminations under way, awaited by drained(). */
  readonly #exits = new Set<Promise<unknown>>();

  constructor(private readonly options: WorkersOptions<J>) {}

  /** Brings the pool back to `size` workers. */
  fill(): void {
    while (!this.closed && this.slots.length < this.options.size) this.#spawn();
  }

  #spawn(): void {
    const o = this.options;
    const worker = new Worker(o.url, { workerData: o.data, execArgv: o.execArgv, resourceLimits: { maxOldGenerationSizeMb: o.maxOldGenerationSizeMb } });
    const slot: Slot<J> = { worker, state: 'starting' };
    this.slots.push(slot);
    worker.unref();
    worker.on('message', (m: WorkerMessage) => o.onMessage(slot, m));
    worker.on('error', (err) => (slot.error = err));
    worker.on('messageerror', (err) => o.onMessageError(slot, err));
    worker.on('exit', () => o.onExit(slot));
  }

  /** Forgets a slot whose worker is gone. */
  remove(slot: Slot<J>): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
  }

  /** Terminates a worker the pool gave up on, and starts its replacement. */
  retire(slot: Slot<J>): void {
    slot.retired = true;
    this.remove(slot);
    const exit: Promise<unknown> = slot.worker.terminate().catch(() => {}).finally(() => this.#exits.delete(exit));
    this.#exits.add(exit);
    this.fill();
  }

  /** Hands a job to a worker (throws when the message does not clone); a busy worker keeps the process alive. */
  take(slot: Slot<J>, job: J, msg: RunMessage): void {
    slot.state = 'busy';
    slot.job = job;
    slot.worker.postMessage(msg);
    slot.worker.ref();
  }

  /** The worker is free again; idle workers do not keep the process alive. */
  release(slot: Slot<J>): void {
    slot.state = 'idle';
    slot.job = undefined;
    slot.worker.unref();
  }

  /** A worker ready for a job, if any. */
  idle(): Slot<J> | undefined {
    return this.slots.find((s) => s.state === 'idle');
  }

  /** How many workers are in `state` (no array built: run() asks on every call). */
  count(state: Slot<J>['state']): number {
    let n = 0;
    for (const s of this.slots) if (s.state === state) n++;
    return n;
  }

  /**
   * Settles once every retired worker has exited, or after `limitMs`: a `terminate()` that never
   * settles (seen once in CI: a close hook hung 30 s) must not hold up a shutdown. The workers
   * are unref'd, so one still exiting keeps nothing alive.
   */
  async drained(limitMs = DRAIN_LIMIT_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, limitMs);
      timer.unref();
    });
    try {
      await Promise.race([Promise.all([...this.#exits]), limit]);
    } finally {
      clearTimeout(timer);
    }
  }
}
