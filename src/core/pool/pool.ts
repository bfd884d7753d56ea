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
import { Worker } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { ToolError } from '../../errors.js';
import type { Logger } from '../../log.js';
import { richResult, type Caller, type RichResult } from '../../registry.js';
import type { ErrorParts, ResultParts, RunMessage, WorkerData, WorkerMessage } from './protocol.js';
import { workerEntry } from './worker-entry.js';

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
  slot?: Slot;
  timer?: NodeJS.Timeout;
  onAbort?: () => void;
}

interface Slot {
  worker: Worker;
  state: 'starting' | 'idle' | 'busy';
  job?: Job;
  /** Set when the pool itself ended this worker (deadline, abort, close): its exit is expected. */
  retired?: boolean;
  /** The worker's 'error' event, read when it exits. */
  error?: unknown;
}

const LOCAL_CALLER: Caller = { keyId: null, ip: 'local', transport: 'memory' };

const busyError = (): ToolError =>
  new ToolError('RATE_LIMITED', 'The server is busy with other heavy calls; retry in a moment', undefined, { 'Retry-After': '1' });
const closedError = (): ToolError => new ToolError('RATE_LIMITED', 'The server is shutting down', undefined, { 'Retry-After': '1' });

/*
 * Deadline and memory cap → 422 PARSE_ERROR: the input was read but is too expensive to
 * process; the same input will fail the same way, so it is not a 429/503 (which invite a
 * retry) nor a 504 (which blames an upstream). A client can act on it: send less.
 */
const deadlineError = (ms: number): ToolError =>
  new ToolError('PARSE_ERROR', `The input is too expensive to process within ${ms / 1000} s; send a smaller or simpler input`, { reason: 'deadline', limitMs: ms });
const memoryError = (mb: number): ToolError =>
  new ToolError('PARSE_ERROR', `The input needs more memory than one call may use (${mb} MB); send a smaller or simpler input`, { reason: 'memory', limitMb: mb });

/** Same answer as the fetcher's for a caller that went away. */
function cancelled(signal: AbortSignal): ToolError {
  return signal.reason instanceof ToolError ? signal.reason : new ToolError('UPSTREAM_TIMEOUT', 'The request was cancelled');
}

function rebuildError(p: ErrorParts): ToolError {
  return new ToolError(p.code, p.message, p.details, p.headers);
}

function rebuildResult(p: ResultParts): RichResult<Record<string, unknown>> {
  const r: Omit<RichResult<Record<string, unknown>>, symbol> = { json: p.json };
  // A view on the moved buffer, not a copy; Buffer because that is what handlers produce.
  if (p.body) r.body = { ...p.body, data: Buffer.from(p.body.data.buffer, p.body.data.byteOffset, p.body.data.byteLength) };
  if (p.content) r.content = p.content;
  return richResult(r);
}

/** Starts `size` workers and returns the pool. */
export function createToolPool(options: ToolPoolOptions): ToolPool {
  const { size, maxQueue, deadlineMs, maxOldGenerationSizeMb, config, log } = options;
  if (!Number.isInteger(size) || size < 1) throw new Error(`pool size must be a whole number ≥ 1, got ${size}`);
  if (!Number.isInteger(maxQueue) || maxQueue < 0) throw new Error(`pool maxQueue must be a whole number ≥ 0, got ${maxQueue}`);
  const entry = workerEntry(import.meta.url);
  const data: WorkerData = { toolsModule: (options.toolsModule ?? entry.toolsModule).href, config };
  const slots: Slot[] = [];
  const queue: Job[] = [];
  /** Terminations under way, awaited by close(). */
  const exits = new Set<Promise<unknown>>();
  let nextId = 1;
  let closed = false;

  function spawn(): void {
    const worker = new Worker(entry.url, {
      workerData: data,
      execArgv: entry.execArgv,
      resourceLimits: { maxOldGenerationSizeMb },
    });
    const slot: Slot = { worker, state: 'starting' };
    slots.push(slot);
    worker.unref();
    worker.on('message', (m: WorkerMessage) => onMessage(slot, m));
    worker.on('error', (err) => (slot.error = err));
    worker.on('messageerror', (err) => onMessageError(slot, err));
    worker.on('exit', () => onExit(slot));
  }

  /** Brings the pool back to `size` workers. */
  function fill(): void {
    while (!closed && slots.length < size) spawn();
  }

  function onMessage(slot: Slot, m: WorkerMessage): void {
    switch (m.type) {
      case 'ready':
        slot.state = 'idle';
        pump();
        return;
      case 'log':
        log[m.level](m.msg, m.extra);
        return;
      case 'progress': {
        const job = slot.job;
        if (job?.id !== m.id || !job.opts.onProgress) return;
        try {
          job.opts.onProgress(m.progress, m.total, m.message);
        } catch (err) {
          log.warn('a progress listener threw', err);
        }
        return;
      }
      case 'done': {
        const job = slot.job;
        if (job?.id !== m.id) return;
        release(slot);
        settle(job);
        if (m.ok) job.resolve(rebuildResult(m.result));
        else job.reject(rebuildError(m.error));
        pump();
        return;
      }
    }
  }

  /** A message that would not deserialize here: its job cannot be answered, so it fails now. */
  function onMessageError(slot: Slot, err: unknown): void {
    log.error('a pool worker message could not be read', err);
    const job = slot.job;
    if (!job) return;
    settle(job);
    retire(slot);
    job.reject(new ToolError('INTERNAL', 'Internal error'));
  }

  function onExit(slot: Slot): void {
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    if (slot.retired) return;
    const err = slot.error as { code?: string } | undefined;
    const job = slot.job;
    if (job) {
      settle(job);
      if (err?.code === 'ERR_WORKER_OUT_OF_MEMORY') {
        log.warn(`a pooled ${job.msg.tool} call reached the worker memory cap (${maxOldGenerationSizeMb} MB)`);
        job.reject(memoryError(maxOldGenerationSizeMb));
      } else {
        log.error(`a pool worker died running ${job.msg.tool}`, slot.error);
        job.reject(new ToolError('INTERNAL', 'Internal error'));
      }
    } else if (slot.state === 'starting') {
      // No respawn here: a worker that cannot start would loop. The next run() tries again.
      log.error('a pool worker failed to start', slot.error);
      if (!slots.some((s) => s.state !== 'starting')) failQueue(() => new ToolError('INTERNAL', 'Internal error'));
      return;
    } else if (!closed) {
      log.error('an idle pool worker died', slot.error);
    }
    fill();
    pump();
  }

  function release(slot: Slot): void {
    slot.state = 'idle';
    slot.job = undefined;
    slot.worker.unref();
  }

  /** Ends a job's timers and listeners; the caller settles its promise. */
  function settle(job: Job): void {
    if (job.timer) clearTimeout(job.timer);
    if (job.onAbort) job.opts.signal?.removeEventListener('abort', job.onAbort);
    job.slot = undefined;
  }

  /** Terminates a worker the pool gave up on, and starts its replacement. */
  function retire(slot: Slot): void {
    slot.retired = true;
    const i = slots.indexOf(slot);
    if (i >= 0) slots.splice(i, 1);
    const exit: Promise<unknown> = slot.worker.terminate().catch(() => {}).finally(() => exits.delete(exit));
    exits.add(exit);
    fill();
  }

  function failQueue(error: () => ToolError): void {
    for (const job of queue.splice(0)) {
      settle(job);
      job.reject(error());
    }
  }

  function dispatch(job: Job, slot: Slot): void {
    slot.state = 'busy';
    slot.job = job;
    job.slot = slot;
    try {
      slot.worker.postMessage(job.msg);
    } catch (err) {
      // Only input that is not plain data (functions, symbols) fails to clone; JSON never does.
      release(slot);
      settle(job);
      job.reject(new ToolError('INVALID_INPUT', 'The input must be plain JSON data'));
      log.debug('pool input did not clone', err);
      return;
    }
    // Busy workers keep the process alive (an awaited job must finish); idle ones do not.
    slot.worker.ref();
    job.timer = setTimeout(() => {
      if (slot.job !== job) return;
      log.warn(`a pooled ${job.msg.tool} call passed its ${job.deadlineMs} ms deadline; its worker is terminated`);
      settle(job);
      retire(slot);
      job.reject(deadlineError(job.deadlineMs));
    }, job.deadlineMs);
  }

  function pump(): void {
    while (queue.length > 0) {
      const slot = slots.find((s) => s.state === 'idle');
      if (!slot) return;
      dispatch(queue.shift()!, slot);
    }
  }

  if (options.startAfter) options.startAfter.then(fill, fill);
  else fill();

  return {
    run(toolName, rawInput, opts = {}) {
      if (closed) return Promise.reject(closedError());
      if (opts.signal?.aborted) return Promise.reject(cancelled(opts.signal));
      fill();
      const idle = slots.find((s) => s.state === 'idle');
      // Workers still starting will take a job each soon: they count as free places.
      const starting = slots.filter((s) => s.state === 'starting').length;
      if (!idle && queue.length >= maxQueue + starting) return Promise.reject(busyError());
      return new Promise((resolve, reject) => {
        const id = nextId++;
        const job: Job = {
          id,
          msg: { type: 'run', id, tool: toolName, input: rawInput, caller: opts.caller ?? LOCAL_CALLER },
          deadlineMs: opts.deadlineMs ?? deadlineMs,
          opts,
          resolve,
          reject,
        };
        const signal = opts.signal;
        if (signal) {
          job.onAbort = () => {
            const q = queue.indexOf(job);
            if (q >= 0) queue.splice(q, 1);
            const slot = job.slot;
            settle(job);
            if (slot) retire(slot);
            job.reject(cancelled(signal));
          };
          signal.addEventListener('abort', job.onAbort, { once: true });
        }
        if (idle) dispatch(job, idle);
        else queue.push(job);
      });
    },

    async close() {
      closed = true;
      failQueue(closedError);
      for (const slot of [...slots]) {
        const job = slot.job;
        retire(slot);
        if (job) {
          settle(job);
          job.reject(closedError());
        }
      }
      await Promise.all([...exits]);
    },

    get stats(): PoolStats {
      let busy = 0;
      let starting = 0;
      for (const s of slots) {
        if (s.state === 'busy') busy++;
        else if (s.state === 'starting') starting++;
      }
      return { size, busy, queued: queue.length, starting };
    },
  };
}
