/**
 * A fixed pool of worker threads for CPU-heavy tools (issue 16, "Heavy work off the event
 * loop"). Each worker runs one job at a time through the same invokeTool() as the main thread,
 * so a pooled call answers exactly what an inline one would; what the pool adds is isolation:
 *
 * - a deadline per job, counted from the moment a ready worker takes it: past it the worker is
 *   terminated (V8 stops even a tight loop) and replaced, and the caller gets a 422;
 * - a V8 heap cap per worker (`resourceLimits`): a job that needs more dies with its worker,
 *   not with the process, and the caller gets a 422;
 * - a bounded queue: a job that finds every worker busy and the queue full is refused at once
 *   (429 with Retry-After), so load turns into refusals instead of memory and latency.
 *
 * Own code on node:worker_threads rather than piscina, measured: tiny json_yaml_convert calls one
 * at a time from dist/, 2 workers, 7 interleaved rounds of 1000 on this 2-core machine (shared,
 * load 8-12): inline 30-60 µs a call, this pool 86-120 µs, piscina 5.3.2 93-179 µs; for 1 MB of
 * JSON → YAML the job itself (0.7-2.5 s) hides either pool's cost. Same cost, then; and what this
 * pool needs beyond a queue (a deadline that starts when the job starts, ToolErrors and
 * RichResults that survive the trip, progress and logs per job) would be written around piscina
 * anyway. bench/pool.ts measures inline against this pool.
 */
import type { Config } from '../../config.js';
import { ToolError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Caller, RichResult } from '../../registry.js';
import { busyError, cancelled, closedError, deadlineError, internalError, memoryError, rebuildError, rebuildResult } from './answers.js';
import type { RunMessage, WorkerMessage } from './protocol.js';
import { workerEntry } from './worker-entry.js';
import { Workers, type Slot } from './workers.js';

export interface ToolPoolOptions {
  /** Worker threads, started at once and replaced when one is terminated. */
  size: number;
  /** Jobs that may wait for a worker; one more is refused at once. */
  maxQueue: number;
  /** Longest a job may run in its worker (ms). */
  deadlineMs: number;
  /** V8 old-generation cap per worker (MB). */
  maxOldGenerationSizeMb: number;
  /** Handed to handlers as ctx.services.config (plain data, cloned into each worker). */
  config: Config;
  /** Receives the workers' log lines and the pool's own. */
  log: Logger;
  /** A module exporting `allTools: AnyTool[]`; default: src/tools/index (or its dist twin). */
  toolsModule?: URL;
  /**
   * Start the workers once this settles (the store's load at start-up: each worker imports the
   * tool libraries, ≈ 0.8 s of CPU that would compete with the load), or at the first job if
   * that comes sooner. Default: at once.
   */
  startAfter?: Promise<unknown>;
}

export interface RunOptions {
  /** Aborting drops a queued job, or terminates (and replaces) the worker running it. */
  signal?: AbortSignal;
  /** The handler's ctx.progress() calls, forwarded from the worker. */
  onProgress?: (progress: number, total?: number, message?: string) => void;
  /** ctx.caller in the worker (default: a keyless local caller). */
  caller?: Caller;
  /** Overrides the pool's deadline for this job (ms). */
  deadlineMs?: number;
}

export interface PoolStats {
  size: number;
  /** Workers running a job. */
  busy: number;
  /** Jobs waiting for a worker. */
  queued: number;
  /** Workers still loading their tools (at start, or replacing a terminated one). */
  starting: number;
}

export interface ToolPool {
  /**
   * Runs a tool by name on raw input: the same validation, handler and output check as
   * invokeTool(), the same RichResult or the same ToolError (code, message, details, headers).
   */
  run(toolName: string, rawInput: unknown, opts?: RunOptions): Promise<RichResult<Record<string, unknown>>>;
  /** Refuses new jobs, fails waiting and running ones, and terminates the workers. */
  close(): Promise<void>;
  readonly stats: PoolStats;
}

interface Job {
  id: number;
  msg: RunMessage;
  deadlineMs: number;
  opts: RunOptions;
  resolve(r: RichResult<Record<string, unknown>>): void;
  reject(e: ToolError): void;
  slot?: Slot<Job>;
  timer?: NodeJS.Timeout;
  onAbort?: () => void;
}

const LOCAL_CALLER: Caller = { keyId: null, ip: 'local', transport: 'memory' };

/** Ends a job's timers and listeners; the caller settles its promise. */
function settle(job: Job): void {
  if (job.timer) clearTimeout(job.timer);
  if (job.onAbort) job.opts.signal?.removeEventListener('abort', job.onAbort);
  job.slot = undefined;
}

/** Starts `size` workers and returns the pool. */
export function createToolPool(options: ToolPoolOptions): ToolPool {
  const { size, maxQueue } = options;
  if (!Number.isInteger(size) || size < 1) throw new Error(`pool size must be a whole number ≥ 1, got ${size}`);
  if (!Number.isInteger(maxQueue) || maxQueue < 0) throw new Error(`pool maxQueue must be a whole number ≥ 0, got ${maxQueue}`);
  return new Pool(options);
}

/** The queue and the jobs' lives; the workers themselves are {@link Workers}'. */
class Pool implements ToolPool {
  readonly #workers: Workers<Job>;
  readonly #queue: Job[] = [];
  readonly #log: Logger;
  #nextId = 1;

  constructor(private readonly options: ToolPoolOptions) {
    this.#log = options.log;
    const entry = workerEntry(import.meta.url);
    this.#workers = new Workers<Job>({
      size: options.size,
      url: entry.url,
      execArgv: entry.execArgv,
      data: { toolsModule: (options.toolsModule ?? entry.toolsModule).href, config: options.config },
      maxOldGenerationSizeMb: options.maxOldGenerationSizeMb,
      onMessage: (slot, m) => this.#onMessage(slot, m),
      onMessageError: (slot, err) => this.#onMessageError(slot, err),
      onExit: (slot) => this.#onExit(slot),
    });
    const fill = () => this.#workers.fill();
    if (options.startAfter) options.startAfter.then(fill, fill);
    else fill();
  }

  run(toolName: string, rawInput: unknown, opts: RunOptions = {}): Promise<RichResult<Record<string, unknown>>> {
    const workers = this.#workers;
    if (workers.closed) return Promise.reject(closedError());
    if (opts.signal?.aborted) return Promise.reject(cancelled(opts.signal));
    workers.fill();
    const idle = workers.idle();
    // Workers still starting will take a job each soon: they count as free places.
    if (!idle && this.#queue.length >= this.options.maxQueue + workers.count('starting')) return Promise.reject(busyError());
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      const job: Job = {
        id,
        msg: { type: 'run', id, tool: toolName, input: rawInput, caller: opts.caller ?? LOCAL_CALLER },
        deadlineMs: opts.deadlineMs ?? this.options.deadlineMs,
        opts,
        resolve,
        reject,
      };
      const signal = opts.signal;
      if (signal) {
        job.onAbort = () => this.#abort(job, signal);
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      if (idle) this.#dispatch(job, idle);
      else this.#queue.push(job);
    });
  }

  async close(): Promise<void> {
    const workers = this.#workers;
    workers.closed = true;
    this.#failQueue(closedError);
    for (const slot of [...workers.slots]) {
      const job = slot.job;
      workers.retire(slot);
      if (job) {
        settle(job);
        job.reject(closedError());
      }
    }
    await workers.drained();
  }

  get stats(): PoolStats {
    const w = this.#workers;
    return { size: this.options.size, busy: w.count('busy'), queued: this.#queue.length, starting: w.count('starting') };
  }

  /** The caller went away: a queued job leaves the queue, a running one takes its worker with it. */
  #abort(job: Job, signal: AbortSignal): void {
    const q = this.#queue.indexOf(job);
    if (q >= 0) this.#queue.splice(q, 1);
    const slot = job.slot;
    settle(job);
    if (slot) this.#workers.retire(slot);
    job.reject(cancelled(signal));
  }

  #onMessage(slot: Slot<Job>, m: WorkerMessage): void {
    switch (m.type) {
      case 'ready':
        slot.state = 'idle';
        this.#pump();
        return;
      case 'log':
        this.#log[m.level](m.msg, m.extra);
        return;
      case 'progress': {
        const job = slot.job;
        if (job?.id !== m.id || !job.opts.onProgress) return;
        try {
          job.opts.onProgress(m.progress, m.total, m.message);
        } catch (err) {
          this.#log.warn('a progress listener threw', err);
        }
        return;
      }
      case 'done': {
        const job = slot.job;
        if (job?.id !== m.id) return;
        this.#workers.release(slot);
        settle(job);
        if (m.ok) job.resolve(rebuildResult(m.result));
        else job.reject(rebuildError(m.error));
        this.#pump();
        return;
      }
    }
  }

  /** A message that would not deserialize here: its job cannot be answered, so it fails now. */
  #onMessageError(slot: Slot<Job>, err: unknown): void {
    this.#log.error('a pool worker message could not be read', err);
    const job = slot.job;
    if (!job) return;
    settle(job);
    this.#workers.retire(slot);
    job.reject(internalError());
  }

  #onExit(slot: Slot<Job>): void {
    const workers = this.#workers;
    workers.remove(slot);
    if (slot.retired) return;
    const job = slot.job;
    if (job) this.#failDied(job, slot.error as { code?: string } | undefined);
    else if (slot.state === 'starting') {
      // No respawn here: a worker that cannot start would loop. The next run() tries again.
      this.#log.error('a pool worker failed to start', slot.error);
      if (!workers.slots.some((s) => s.state !== 'starting')) this.#failQueue(internalError);
      return;
    } else if (!workers.closed) {
      this.#log.error('an idle pool worker died', slot.error);
    }
    workers.fill();
    this.#pump();
  }

  /** The worker running `job` died on its own: out of memory (the heap cap), or a crash. */
  #failDied(job: Job, err: { code?: string } | undefined): void {
    settle(job);
    const mb = this.options.maxOldGenerationSizeMb;
    if (err?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
      this.#log.warn(`a pooled ${job.msg.tool} call reached the worker memory cap (${mb} MB)`);
      job.reject(memoryError(mb));
    } else {
      this.#log.error(`a pool worker died running ${job.msg.tool}`, err);
      job.reject(internalError());
    }
  }

  #failQueue(error: () => ToolError): void {
    for (const job of this.#queue.splice(0)) {
      settle(job);
      job.reject(error());
    }
  }

  #dispatch(job: Job, slot: Slot<Job>): void {
    job.slot = slot;
    try {
      this.#workers.take(slot, job, job.msg);
    } catch (err) {
      // Only input that is not plain data (functions, symbols) fails to clone; JSON never does.
      this.#workers.release(slot);
      settle(job);
      job.reject(new ToolError('INVALID_INPUT', 'The input must be plain JSON data'));
      this.#log.debug('pool input did not clone', err);
      return;
    }
    job.timer = setTimeout(() => this.#expire(job, slot), job.deadlineMs);
  }

  /** Past its deadline: the worker is terminated (V8 stops even a tight loop) and replaced. */
  #expire(job: Job, slot: Slot<Job>): void {
    if (slot.job !== job) return;
    this.#log.warn(`a pooled ${job.msg.tool} call passed its ${job.deadlineMs} ms deadline; its worker is terminated`);
    settle(job);
    this.#workers.retire(slot);
    job.reject(deadlineError(job.deadlineMs));
  }

  #pump(): void {
    while (this.#queue.length > 0) {
      const slot = this.#workers.idle();
      if (!slot) return;
      this.#dispatch(this.#queue.shift()!, slot);
    }
  }
}
