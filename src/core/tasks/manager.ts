/**
 * Tasks: a slow tool call started now and fetched later, on any instance that shares the store.
 * Transport-neutral: the MCP face (the Tasks extension, src/mcp/tasks.ts) and the REST face
 * (`Prefer: respond-async`, src/http/tasks.ts) translate its views. docs/tasks.md has the flow.
 *
 * - create: the call goes through the one call path (CallPath.call) with the caller's identity,
 *   so it is admitted (counted once against the limits) exactly like a synchronous call. A call
 *   refused at admission, or whose input does not validate, is answered at once, without a task.
 *   Otherwise the task is written durably (so a `get` on any instance finds it) and then answered.
 * - the call runs in this process, in the background; its progress (`ctx.progress`) and its
 *   outcome are written to the record. Cancel aborts `ctx.signal`.
 * - a lease: the running instance renews `leaseUntil` every leaseMs/3. A working task whose lease
 *   ran out (its instance died) is reported `failed` (JSON-RPC -32603) on the next read. With an
 *   embedded store (one process per data dir) a task of an earlier process is failed at once.
 * - TTL: a task is kept ttlMs from its creation (default 1 h), then reads say not found and a
 *   sweep deletes it.
 * - ownership: `ownerKey(caller)`; anyone else gets "not found", exactly as for a missing id.
 * - polling is free (no limit unit) but bounded: a token bucket per owner and instance (off,
 *   like every rate limit, with RATE_LIMITS=off).
 */
import { randomUUID } from 'node:crypto';
import { isLimitedTransport } from '../../auth/auth.js';
import { ownerKey } from '../../auth/owner.js';
import { ToolError, toToolError } from '../../errors.js';
import type { AnyTool, Caller } from '../../registry.js';
import type { Services } from '../../services.js';
import { STORE_RETRY_AFTER_SECONDS, type Collection } from '../../state/index.js';
import type { CallOutcome, CallPath } from '../call.js';
import { TASK_CHUNKS, TASKS, type StoredOutcome, type TaskChunk, type TaskFailure, type TaskProgress, type TaskRecord } from './record.js';

export interface TaskOptions {
  /** How long a task (and its result) is kept from its creation (TASK_TTL_MS, default 1 h). */
  ttlMs: number;
  /** A working task whose instance has not renewed it for this long is reported failed (TASK_LEASE_MS, default 30 s). */
  leaseMs: number;
  /** The polling interval suggested to clients. */
  pollIntervalMs: number;
  /** Tasks one owner may keep at once (working or kept for their TTL). */
  maxPerOwner: number;
  /** Largest outcome a task keeps (its JSON, binary bodies base64-encoded), in bytes. */
  maxResultBytes: number;
  /** Longest a task may run before it is aborted (the tools' own deadlines are shorter). */
  maxRunMs: number;
  /** Polls (get/cancel) per owner and instance: a bucket of `burst` refilled at `perSecond`. */
  poll: { perSecond: number; burst: number };
}

export const DEFAULT_TASK_OPTIONS: TaskOptions = {
  ttlMs: 3_600_000,
  leaseMs: 30_000,
  pollIntervalMs: 1000,
  maxPerOwner: 1000,
  maxResultBytes: 32 * 1024 * 1024,
  maxRunMs: 15 * 60_000,
  poll: { perSecond: 10, burst: 30 },
};

/** What a face shows of a task (its outcome is read separately: `outcome()`). */
export type TaskView = Pick<TaskRecord, 'taskId' | 'tool' | 'status' | 'statusMessage' | 'progress' | 'createdAt' | 'lastUpdatedAt' | 'ttlMs' | 'error'> & {
  pollIntervalMs: number;
};

export type CreateResult =
  /** A task was created: answer with its handle. `headers`: the call's limit headers. */
  | { kind: 'task'; task: TaskView; headers: Readonly<Record<string, string>> | undefined }
  /** No task: the call was refused or failed before it got going (or finished at once); answer it as a synchronous call. */
  | { kind: 'done'; outcome: CallOutcome };

/** Polling faster than the bucket allows: retry after this many ms. */
export class PollTooFast extends Error {
  override readonly name = 'PollTooFast';
  constructor(readonly retryAfterMs: number) {
    super('Polling too fast');
  }
}

/** JSON-RPC "Internal error": the code of every failed task (the spec reserves `failed` for JSON-RPC errors). */
export const TASK_FAILED_CODE = -32603;

/** Inline outcomes up to this many characters; larger ones go to chunks (a file store write rewrites a record's whole segment). */
const INLINE_MAX = 16 * 1024;
/** Characters of base64 per chunk (a multiple of 4, so the parts concatenate). */
const CHUNK_CHARS = 256 * 1024;
/** Progress is written at most this often per task. */
const PROGRESS_WRITE_MS = 200;

interface Running {
  id: string;
  ac: AbortController;
  /** Resolves true once the record is durable (false when it could not be created). */
  created: Promise<boolean>;
  progress?: TaskProgress;
  progressTimer?: NodeJS.Timeout;
  deadline?: NodeJS.Timeout;
}

const iso = (ms: number) => new Date(ms).toISOString();

export class TaskManager {
  /** This process (a task records the instance running it). */
  readonly instance = randomUUID();
  readonly options: TaskOptions;
  readonly #services: Services;
  readonly #calls: CallPath;
  readonly #tasks: Collection<TaskRecord>;
  readonly #chunks: Collection<TaskChunk>;
  readonly #running = new Map<string, Running>();
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  /** One process owns an embedded store: a working task of another instance cannot be running. */
  readonly #singleProcess: boolean;
  #heartbeat: NodeJS.Timeout | undefined;
  #sweep: NodeJS.Timeout | undefined;
  #closed = false;
  /** Resolved (and emptied) whenever no task runs here any more: see settle(). */
  #idle: Array<() => void> = [];

  constructor(services: Services, calls: CallPath, options: Partial<TaskOptions> = {}) {
    this.#services = services;
    this.#calls = calls;
    this.options = { ...DEFAULT_TASK_OPTIONS, ...options };
    this.#tasks = services.store.collection(TASKS);
    this.#chunks = services.store.collection(TASK_CHUNKS);
    this.#singleProcess = services.store.kind !== 'redis';
    // First sweep soon after start (tasks expired while the server was down), then every minute.
    this.#sweep = setTimeout(() => void this.#sweepLoop(), 5_000);
    this.#sweep.unref();
  }

  get #now(): number {
    return this.#services.clock.now();
  }

  // ─── create ──────────────────────────────────────────────────────────────────────────────

  /**
   * Starts a call as a task. The call is admitted by the call path first: a refusal (429), bad
   * input (400) or anything else that ends before the handler gets going is answered as a
   * synchronous call (`done`), and no task exists. Otherwise the task record is durable before
   * this resolves.
   */
  async create(caller: Caller, tool: AnyTool, input: unknown): Promise<CreateResult> {
    if (this.#closed) return { kind: 'done', outcome: { ok: false, error: new ToolError('STORAGE_UNAVAILABLE', 'The server is shutting down; retry on another instance', undefined, { 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) }), headers: undefined } };
    const id = randomUUID();
    const ac = new AbortController();
    let created!: (ok: boolean) => void;
    const run: Running = { id, ac, created: new Promise<boolean>((r) => (created = r)) };
    let headers: Readonly<Record<string, string>> | undefined;
    let admitted!: () => void;
    const admission = new Promise<void>((r) => (admitted = r));
    // Unlimited callers (stdio, limits off) are admitted without a word from the limiter.
    if (!(this.#services.auth.enabled && isLimitedTransport(caller))) admitted();
    let settled: CallOutcome | undefined;
    const call = this.#calls
      .call(caller, tool, input, {
        signal: ac.signal,
        progress: (p, total, message) => this.#progress(run, p, total, message),
        onHeaders: (h) => {
          headers = h;
          admitted();
        },
      })
      .then((out) => (settled = out));
    await Promise.race([admission, call]);
    // A refusal, an input error or a gate that is full settles within microtasks of the admission.
    await new Promise<void>((r) => setImmediate(r));
    if (settled) return { kind: 'done', outcome: settled };

    const now = this.#now;
    const owner = ownerKey(caller);
    const record: TaskRecord = {
      taskId: id,
      owner,
      tool: tool.name,
      status: 'working',
      createdAt: iso(now),
      lastUpdatedAt: iso(now),
      ttlMs: this.options.ttlMs,
      expiresAt: now + this.options.ttlMs,
      instance: this.instance,
      leaseUntil: now + this.options.leaseMs,
    };
    this.#running.set(id, run);
    let inserted: Awaited<ReturnType<Collection<TaskRecord>['insertCapped']>>;
    try {
      inserted = await this.#tasks.insertCapped(record, { within: { index: 'owner', eq: owner }, max: this.options.maxPerOwner });
    } catch (err) {
      this.#drop(run, err);
      created(false);
      return { kind: 'done', outcome: { ok: false, error: toToolError(err, (m, c) => this.#services.log.error(`${m} creating a task`, c)), headers } };
    }
    if (inserted !== 'inserted') {
      this.#drop(run, new Error('task not created'));
      created(false);
      const error =
        inserted === 'full'
          ? new ToolError('RATE_LIMITED', `Too many tasks kept for this caller (${this.options.maxPerOwner} within their TTL); wait for some to expire, or call without a task`, { limit: this.options.maxPerOwner }, { 'Retry-After': '60' })
          : new ToolError('INTERNAL', 'Internal error');
      return { kind: 'done', outcome: { ok: false, error, headers } };
    }
    created(true);
    this.#services.metrics.task('working');
    run.deadline = setTimeout(() => ac.abort(new ToolError('UPSTREAM_TIMEOUT', `The task ran longer than ${this.options.maxRunMs} ms and was stopped`)), this.options.maxRunMs);
    run.deadline.unref();
    this.#startHeartbeat();
    void call.then((out) => this.#finish(run, out));
    return { kind: 'task', task: this.#view(record), headers };
  }

  #drop(run: Running, reason: unknown): void {
    this.#forget(run.id);
    run.ac.abort(reason);
  }

  #forget(id: string): void {
    this.#running.delete(id);
    if (this.#running.size > 0) return;
    const waiting = this.#idle;
    this.#idle = [];
    for (const resolve of waiting) resolve();
  }

  /**
   * Resolves once no task runs here, their outcomes recorded: a draining server waits for this
   * (bounded by SHUTDOWN_TIMEOUT_MS) before close() records the ones left failed.
   */
  settle(): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  // ─── read, cancel ────────────────────────────────────────────────────────────────────────

  /**
   * Counts one poll of an owner against its bucket; throws PollTooFast when it is empty. Polls
   * cost no limit unit: the bucket only bounds how hard one caller can make an instance read
   * (HTTP callers with RATE_LIMITS on; stdio is unbounded, like its calls).
   */
  poll(caller: Caller): void {
    // Local transports (stdio, in-memory) are the caller's own process: nothing to protect.
    // RATE_LIMITS=off: a caller may already run any number of tool calls, each dearer than a
    // poll, so the bucket would protect nothing; it is one of the limits that switch turns off.
    if (!this.#services.auth.enabled || !isLimitedTransport(caller)) return;
    const owner = ownerKey(caller);
    const now = this.#now;
    const { perSecond, burst } = this.options.poll;
    let b = this.#buckets.get(owner);
    if (!b) {
      if (this.#buckets.size >= 10_000) this.#buckets.clear();
      this.#buckets.set(owner, (b = { tokens: burst, at: now }));
    }
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
    if (b.tokens < 1) throw new PollTooFast(Math.ceil(((1 - b.tokens) / perSecond) * 1000));
    b.tokens -= 1;
  }

  /** The caller's task, or undefined when there is none: unknown, expired, or someone else's (the same answer). */
  async get(caller: Caller, taskId: string): Promise<TaskView | undefined> {
    const r = await this.#own(caller, taskId);
    return r && this.#view(r);
  }

  /**
   * The outcome of a completed task: the tool's JSON (or error) as the call produced it.
   * Undefined while it is not completed (or when it is gone).
   */
  async outcome(caller: Caller, taskId: string): Promise<StoredOutcome | undefined> {
    const r = await this.#own(caller, taskId);
    if (!r || r.status !== 'completed') return undefined;
    if (r.outcome) return r.outcome;
    if (!r.chunks) return undefined;
    const parts = await Promise.all(Array.from({ length: r.chunks }, (_, n) => this.#chunks.get(`${taskId}:${n}`)));
    if (parts.some((p) => p === undefined)) return undefined;
    return JSON.parse(Buffer.from(parts.map((p) => p!.data).join(''), 'base64').toString('utf8')) as StoredOutcome;
  }

  /**
   * Asks a task to stop: a working task becomes `cancelled` at once and its handler's signal is
   * aborted (here, or by its instance at its next heartbeat). A finished task is left as it is.
   * False when the caller has no such task.
   */
  async cancel(caller: Caller, taskId: string): Promise<boolean> {
    const r = await this.#own(caller, taskId);
    if (!r) return false;
    if (r.status === 'working') {
      const now = this.#now;
      await this.#tasks.update(taskId, (cur) =>
        cur?.status === 'working' ? { ...cur, status: 'cancelled', statusMessage: 'Cancelled at the client’s request', lastUpdatedAt: iso(now), leaseUntil: 0 } : undefined,
      );
      this.#running.get(taskId)?.ac.abort(new ToolError('UPSTREAM_ERROR', 'The task was cancelled'));
      this.#services.metrics.task('cancelled');
    }
    return true;
  }

  /** The record if it belongs to the caller and has not expired; a working task whose instance died is failed first. */
  async #own(caller: Caller, taskId: string): Promise<TaskRecord | undefined> {
    if (typeof taskId !== 'string' || taskId.length === 0 || taskId.length > 100) return undefined;
    let r = await this.#tasks.get(taskId);
    if (!r || r.owner !== ownerKey(caller)) return undefined;
    const now = this.#now;
    if (now >= r.expiresAt) {
      void this.#remove(taskId).catch(() => {});
      return undefined;
    }
    if (r.status === 'working' && this.#orphaned(r, now)) r = (await this.#failOrphan(taskId, now)) ?? r;
    return r;
  }

  #orphaned(r: TaskRecord, now: number): boolean {
    if (this.#running.has(r.taskId)) return false;
    return r.leaseUntil <= now || (this.#singleProcess && r.instance !== this.instance) || r.instance === this.instance;
  }

  #failOrphan(taskId: string, now: number): Promise<TaskRecord | undefined> {
    return this.#tasks.update(taskId, (cur) => {
      if (!cur || cur.status !== 'working' || !this.#orphaned(cur, now)) return undefined;
      const since = iso(cur.leaseUntil - this.options.leaseMs);
      const error: TaskFailure = {
        code: TASK_FAILED_CODE,
        message: `The server instance running this task stopped before it finished (last heartbeat ${since}); call the tool again`,
        data: { reason: 'instance_lost', lastHeartbeat: since },
      };
      return { ...cur, status: 'failed', statusMessage: error.message, error, lastUpdatedAt: iso(now), leaseUntil: 0 };
    });
  }

  #view(r: TaskRecord): TaskView {
    const v: TaskView = { taskId: r.taskId, tool: r.tool, status: r.status, createdAt: r.createdAt, lastUpdatedAt: r.lastUpdatedAt, ttlMs: r.ttlMs, pollIntervalMs: this.options.pollIntervalMs };
    if (r.statusMessage !== undefined) v.statusMessage = r.statusMessage;
    if (r.progress !== undefined) v.progress = r.progress;
    if (r.error !== undefined) v.error = r.error;
    return v;
  }

  // ─── the running call ────────────────────────────────────────────────────────────────────

  async #progress(run: Running, progress: number, total?: number, message?: string): Promise<void> {
    const p: TaskProgress = { progress };
    if (total !== undefined) p.total = total;
    if (message) p.message = message;
    run.progress = p;
    if (run.progressTimer) return;
    run.progressTimer = setTimeout(() => {
      run.progressTimer = undefined;
      void run.created.then((ok) => {
        if (!ok || !this.#running.has(run.id) || !run.progress) return;
        const cur = run.progress;
        const now = this.#now;
        const statusMessage = progressMessage(cur);
        return this.#tasks
          .update(run.id, (r) => (r?.status === 'working' && r.instance === this.instance ? { ...r, progress: cur, statusMessage, lastUpdatedAt: iso(now) } : undefined), { durability: 'lazy' })
          .then(() => undefined);
      }).catch((err: unknown) => this.#services.log.warn(`tasks: could not record the progress of ${run.id}`, err));
    }, PROGRESS_WRITE_MS);
    run.progressTimer.unref();
  }

  async #finish(run: Running, out: CallOutcome): Promise<void> {
    clearTimeout(run.progressTimer);
    clearTimeout(run.deadline);
    const id = run.id;
    try {
      const stored = toStored(out);
      const text = JSON.stringify(stored);
      const now = this.#now;
      let patch: Partial<TaskRecord>;
      let chunks = 0;
      if (text.length <= INLINE_MAX) patch = { outcome: stored };
      else {
        const bytes = Buffer.from(text, 'utf8');
        if (bytes.length > this.options.maxResultBytes) {
          const error: TaskFailure = {
            code: TASK_FAILED_CODE,
            message: `The result (${bytes.length} bytes) is larger than the ${this.options.maxResultBytes} bytes a task keeps; call the tool without a task`,
            data: { reason: 'result_too_large', bytes: bytes.length, limit: this.options.maxResultBytes },
          };
          patch = { status: 'failed', error, statusMessage: error.message };
        } else {
          const b64 = bytes.toString('base64');
          chunks = Math.ceil(b64.length / CHUNK_CHARS);
          for (let n = 0; n < chunks; n++) {
            await this.#chunks.put({ id: `${id}:${n}`, taskId: id, n, data: b64.slice(n * CHUNK_CHARS, (n + 1) * CHUNK_CHARS) });
          }
          patch = { chunks };
        }
      }
      const progress = run.progress;
      // Counted once written (an updater may run more than once on a shared store).
      let wrote: string | undefined;
      const after = await this.#tasks.update(id, (cur) => {
        if (cur?.status !== 'working' || cur.instance !== this.instance) return undefined; // cancelled (or failed) meanwhile
        const next: TaskRecord = { ...cur, status: 'completed', lastUpdatedAt: iso(now), leaseUntil: 0, ...patch };
        wrote = next.status;
        if (progress) next.progress = progress;
        if (next.status === 'completed') {
          if (out.ok) delete next.statusMessage;
          else next.statusMessage = `The tool answered an error: ${out.error.code}`;
        }
        return next;
      });
      if (wrote !== undefined) this.#services.metrics.task(wrote);
      if (chunks > 0 && (after?.status !== 'completed' || after.chunks !== chunks)) await this.#removeChunks(id);
    } catch (err) {
      this.#services.log.error(`tasks: could not record the outcome of ${id} (it will be reported failed when its lease runs out)`, err);
    } finally {
      this.#forget(id);
    }
  }

  #startHeartbeat(): void {
    if (this.#heartbeat) return;
    this.#heartbeat = setInterval(() => void this.#beat(), Math.max(100, Math.floor(this.options.leaseMs / 3)));
    this.#heartbeat.unref();
  }

  /** Renews the lease of every task running here; aborts those cancelled elsewhere (or gone). */
  async #beat(): Promise<void> {
    if (this.#running.size === 0) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
      return;
    }
    const until = this.#now + this.options.leaseMs;
    await Promise.all(
      [...this.#running.values()].map(async (run) => {
        if (!(await run.created)) return;
        try {
          const r = await this.#tasks.update(run.id, (cur) => (cur?.status === 'working' && cur.instance === this.instance ? { ...cur, leaseUntil: until } : undefined), { durability: 'lazy' });
          if (!r || r.status !== 'working') run.ac.abort(new ToolError('UPSTREAM_ERROR', 'The task was cancelled'));
        } catch (err) {
          this.#services.log.warn(`tasks: could not renew the lease of ${run.id}`, err);
        }
      }),
    );
  }

  // ─── TTL ─────────────────────────────────────────────────────────────────────────────────

  async #sweepLoop(): Promise<void> {
    try {
      await this.sweep();
    } catch (err) {
      this.#services.log.warn('tasks: the TTL sweep failed', err);
    }
    if (this.#closed) return;
    this.#sweep = setTimeout(() => void this.#sweepLoop(), 60_000);
    this.#sweep.unref();
  }

  /** Deletes tasks (and their chunks) past their TTL; resolves with how many. */
  async sweep(): Promise<number> {
    const expired = await this.#tasks.query({ index: 'expiresAt', lte: this.#now, limit: 500 });
    for (const r of expired) await this.#remove(r.taskId);
    return expired.length;
  }

  async #remove(taskId: string): Promise<void> {
    await this.#removeChunks(taskId);
    await this.#tasks.delete(taskId, { durability: 'lazy' });
  }

  async #removeChunks(taskId: string): Promise<void> {
    const chunks = await this.#chunks.query({ index: 'taskId', eq: taskId });
    for (const c of chunks) await this.#chunks.delete(c.id, { durability: 'lazy' });
  }

  // ─── shutdown ────────────────────────────────────────────────────────────────────────────

  /** Stops the timers; tasks still running here are aborted and recorded failed (the server is going away). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#sweep);
    clearInterval(this.#heartbeat);
    const now = this.#now;
    const error: TaskFailure = { code: TASK_FAILED_CODE, message: 'The server shut down while the task ran; call the tool again', data: { reason: 'shutdown' } };
    const pending = [...this.#running.values()].map(async (run) => {
      clearTimeout(run.progressTimer);
      clearTimeout(run.deadline);
      run.ac.abort(new ToolError('UPSTREAM_ERROR', 'The server is shutting down'));
      if (!(await run.created)) return;
      await this.#tasks.update(run.id, (cur) =>
        cur?.status === 'working' && cur.instance === this.instance ? { ...cur, status: 'failed', error, statusMessage: error.message, lastUpdatedAt: iso(now), leaseUntil: 0 } : undefined,
      );
    });
    this.#running.clear();
    for (const resolve of this.#idle.splice(0)) resolve();
    const settled = Promise.allSettled(pending);
    await Promise.race([settled, new Promise((r) => setTimeout(r, 2000).unref())]);
  }
}

function progressMessage(p: TaskProgress): string {
  const n = p.total !== undefined ? `${p.progress}/${p.total}` : String(p.progress);
  return p.message ? `${p.message} (${n})` : `progress ${n}`;
}

/** A call outcome in the transport-neutral stored shape. */
export function toStored(out: CallOutcome): StoredOutcome {
  if (!out.ok) {
    const s: StoredOutcome = { ok: false, error: out.error.toJSON() };
    if (out.error.headers) s.headers = out.error.headers;
    return s;
  }
  const r = out.value;
  const s: StoredOutcome = { ok: true, json: r.json };
  if (r.body) {
    s.body = { base64: Buffer.from(r.body.data.buffer, r.body.data.byteOffset, r.body.data.byteLength).toString('base64'), contentType: r.body.contentType };
    if (r.body.headers) s.body.headers = r.body.headers;
  }
  if (r.content) s.content = r.content;
  return s;
}
