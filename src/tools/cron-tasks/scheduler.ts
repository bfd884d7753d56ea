/**
 * The due-check scheduler (serve mode only): queues one signed webhook per due occurrence of
 * every task with a callback_url (and one per retry after a reported failure), and delivers
 * them with retries (./deliveries.ts). Every record change is a pure transition of
 * ./transitions.ts applied in one atomic update; this module holds only the scheduler's own
 * state (the tick chain and the timers). Everything it needs to resume lives in the task
 * records, so a restart picks up where a crash left off. docs/cron-tasks.md describes the scheme.
 *
 * The due check reads the `wake_at` index of the tasks collection — min(time the next webhook
 * is owed = next_run_at of the occurrence, next delivery attempt) — as one range query
 * `[0, now]`: its cost grows with the number of tasks that need work, not with all tasks.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import cron, { type ScheduledTask } from 'node-cron';
import type { Services } from '../../services.js';
import type { Collection } from '../../state/index.js';
import { Deliveries, type AttemptEvent } from './deliveries.js';
import { appendLog, lateOwedAt, tasksOf, WAKE_EVENT } from './model.js';
import type { TaskRecord } from './records.js';
import { logExpiry, logLate } from './steer.js';
import { droppedMessage, expireClaim, queueDue, queueLate, startable, type Expiry, type LateNotice, type Lease, type Queued } from './transitions.js';
import { defaultBackoff, DELIVERY_TIMEOUT_MS, MAX_ATTEMPTS } from './webhook.js';

export interface SchedulerOptions {
  /**
   * true (default): node-cron ticks at the start of every minute, and a timer wakes the loop
   * for retries that fall between minutes. false: nothing runs by itself; the caller drives
   * `tick(now)` (tests, with an injected clock).
   */
  timers?: boolean;
  /** Delay in ms before the next attempt after `attempt` failed ones (default: exponential with jitter). */
  backoff?: (attempt: number) => number;
  /** Deadline of one delivery attempt (default 10 s; also capped by FETCH_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Attempts per webhook (default 5). */
  maxAttempts?: number;
  /** Deliveries in flight at once (default 16). */
  concurrency?: number;
  /** Tasks handled per tick (default 1000; more → another tick right after). */
  batch?: number;
  /**
   * How long one instance holds an attempt it started (default: the attempt's deadline + 5 s).
   * Another instance takes the attempt over only after this, with the same webhook-id.
   */
  leaseMs?: number;
  /** This scheduler's name in leases (default: host, pid and a random part). */
  instanceId?: string;
  /** Observes what the scheduler does (tests, the crash-test child). */
  onEvent?: (e: SchedulerEvent) => void;
}

export type SchedulerEvent =
  | { type: 'queued'; task_id: string; webhook_id: string; scheduled_for: string }
  /** An occurrence noticed late (once); webhook_id of its cron_task.late message, null without callback_url. */
  | { type: 'late'; task_id: string; webhook_id: string | null; scheduled_for: string }
  | AttemptEvent;

export interface TickResult {
  /** Webhooks newly queued by this tick (due and late ones). */
  queued: number;
  /** Delivery attempts started by this tick. */
  started: number;
}

export interface Scheduler {
  /** One due check at `now` (default: the services clock). Resolves once queued; attempts run on. */
  tick(now?: number): Promise<TickResult>;
  /** Resolves when no delivery attempt is in flight. */
  settle(): Promise<void>;
  /** Stops the timers, aborts attempts in flight (they are redone after a restart). Idempotent. */
  stop(): Promise<void>;
}

const MINUTE = 60_000;
/** The store signal between the schedulers of instances sharing a store (see wakeAll, Deliveries). */
const SIGNAL = 'cron-tasks:wake';

/** Starts the scheduler of `services` (timers on unless `opts.timers` is false); `closeServices` stops it. */
export function startScheduler(services: Services, opts: SchedulerOptions = {}): Scheduler {
  const scheduler = new CronScheduler(services, opts);
  services.closers.push(() => scheduler.stop());
  return scheduler;
}

class CronScheduler implements Scheduler {
  readonly #services: Services;
  readonly #tasks: Collection<TaskRecord>;
  readonly #lease: Lease;
  readonly #concurrency: number;
  readonly #batch: number;
  readonly #emit: (e: SchedulerEvent) => void;
  readonly #deliveries: Deliveries;
  /** Timers on: the minute tick, the wake-up timer, wake-ups from tools and other instances. */
  readonly #auto: boolean;
  #stopped = false;
  /** Ticks run one after another: each waits for the one before. */
  #chain: Promise<unknown> = Promise.resolve();
  #tickRequested = false;
  #wakeTimer: NodeJS.Timeout | null = null;
  #cronTask: ScheduledTask | null = null;
  #unsubscribe: (() => void) | undefined;
  readonly #wakeAll = (): void => {
    // A wake-up of this process (a create or report owing a webhook now): the other instances check too.
    this.#services.store.signals?.publish(SIGNAL);
    this.#requestTick();
  };

  constructor(services: Services, opts: SchedulerOptions) {
    this.#services = services;
    this.#tasks = tasksOf(services.store);
    this.#auto = opts.timers ?? true;
    // The fetcher caps every exchange at FETCH_TIMEOUT_MS: the attempt's real deadline.
    const timeoutMs = Math.min(opts.timeoutMs ?? DELIVERY_TIMEOUT_MS, services.config.fetchTimeoutMs);
    this.#lease = {
      by: opts.instanceId ?? `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`,
      ms: opts.leaseMs ?? timeoutMs + 5000,
      shared: services.store.signals !== undefined,
    };
    this.#concurrency = opts.concurrency ?? 16;
    this.#batch = opts.batch ?? 1000;
    this.#emit = (e) => {
      try {
        opts.onEvent?.(e);
      } catch {
        // an observer's failure is not ours
      }
    };
    this.#deliveries = new Deliveries(services, this.#tasks, {
      lease: this.#lease,
      timeoutMs,
      maxAttempts: opts.maxAttempts ?? MAX_ATTEMPTS,
      backoff: opts.backoff ?? ((n: number) => defaultBackoff(n)),
      signal: SIGNAL,
      emit: this.#emit,
      onEnd: () => this.#requestTick(),
    });
    if (this.#auto) this.#startTimers();
  }

  tick(now?: number): Promise<TickResult> {
    const run = this.#chain.then(() => this.#runTick(now ?? this.#services.clock.now()));
    this.#chain = run.catch(() => undefined);
    return run;
  }

  settle(): Promise<void> {
    return this.#deliveries.settle();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#services.events.off(WAKE_EVENT, this.#wakeAll);
    this.#unsubscribe?.();
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
    this.#wakeTimer = null;
    if (this.#cronTask) await this.#cronTask.destroy();
    this.#cronTask = null;
    await this.#deliveries.stop();
    await this.#chain;
  }

  /** Queues the webhooks owed by `now` and starts the attempts that may start. */
  async #runTick(now: number): Promise<TickResult> {
    if (this.#stopped) return { queued: 0, started: 0 };
    const ready = await this.#tasks.query({ index: 'wake_at', gte: 0, lte: now, limit: this.#batch });
    let queued = 0;
    const current = await Promise.all(
      ready.map(async (r) => {
        let t = r.claim != null && r.claim.lease_until <= now ? await this.#expire(r.task_id, now) : r;
        if (t && t.notify_at !== null && t.notify_at <= now) {
          const { record, added } = await this.#queue(t.task_id, now);
          if (added) queued++;
          t = record;
        }
        const late = t ? lateOwedAt(t) : null;
        if (t && late !== null && late <= now) {
          const { record, added } = await this.#late(t.task_id, now);
          if (added) queued++;
          t = record;
        }
        return t;
      }),
    );
    let started = 0;
    for (const t of current) {
      if (!t) continue;
      for (const w of startable(t, now, this.#lease)) {
        if (this.#deliveries.has(w.id) || this.#deliveries.size >= this.#concurrency || this.#stopped) continue;
        this.#deliveries.start(t.task_id, w.id);
        started++;
      }
    }
    // A full batch: more may be ready behind it — but only if this one moved (else the same
    // records are read again and again while every delivery slot is busy: a slot's end ticks).
    if (ready.length >= this.#batch && (queued > 0 || started > 0)) this.#requestTick();
    return { queued, started };
  }

  /** A claim whose lease ended: applied as a failed attempt (once, by whichever update gets there) and logged. */
  async #expire(taskId: string, now: number): Promise<TaskRecord | undefined> {
    let e: Expiry | undefined;
    const u = await this.#tasks.update(taskId, (cur) => {
      e = cur ? expireClaim(cur, now) : undefined;
      return e?.expired ? e.next : undefined;
    });
    if (u && e?.expired) await logExpiry(this.#services.store, u, e);
    return u;
  }

  /** Applies queueDue to the stored task, logs what it dropped; returns the record as written. */
  async #queue(taskId: string, now: number): Promise<{ record: TaskRecord | undefined; added: boolean }> {
    let q: Queued | undefined;
    const u = await this.#tasks.update(
      taskId,
      (cur) => (q = queueDue(cur, now))?.next,
      // Lazy: lost in a crash, the notification is still owed on disk and is queued again after
      // the restart under the same webhook-id (receivers dedupe on it, per Standard Webhooks).
      { durability: 'lazy' },
    );
    const added = u ? q?.added : undefined;
    if (u && added) this.#emit({ type: 'queued', task_id: u.task_id, webhook_id: added.id, scheduled_for: added.scheduled_for });
    if (u) {
      for (const d of q?.dropped ?? []) {
        await appendLog(this.#services.store, u, { status: 'webhook_failed', message: droppedMessage(d), attempt: d.attempt, at: now });
      }
    }
    return { record: u, added: added !== undefined };
  }

  /** Applies queueLate to the stored task (the occurrence noticed late, once across instances) and logs it. */
  async #late(taskId: string, now: number): Promise<{ record: TaskRecord | undefined; added: boolean }> {
    let n: LateNotice | undefined;
    // Durable (not lazy, unlike queueDue): the late log entry is written once, by the update that noticed it.
    const u = await this.#tasks.update(taskId, (cur) => (n = queueLate(cur, now))?.next);
    if (!u || !n) return { record: u, added: false };
    await logLate(this.#services.store, u, n, now);
    this.#emit({ type: 'late', task_id: u.task_id, webhook_id: n.added?.id ?? null, scheduled_for: u.next_run_at });
    return { record: u, added: n.added !== undefined };
  }

  /** node-cron at the start of every minute, wake-ups from the tools and from other instances, and a first check now. */
  #startTimers(): void {
    const { log } = this.#services;
    this.#cronTask = cron.schedule(
      '* * * * *',
      (ctx) => {
        // node-cron may fire a hair before the minute: never check earlier than the minute it fires for.
        const now = Math.max(this.#services.clock.now(), ctx.date.getTime());
        this.#tickThenArm(now);
      },
      {
        name: 'devtoolbox-cron-tasks',
        logger: {
          info: (m) => log.debug(`node-cron: ${m}`),
          warn: (m) => log.warn(`node-cron: ${m}`),
          error: (m, e) => log.error(`node-cron: ${String(m)}`, e),
          debug: (m) => log.debug(`node-cron: ${String(m)}`),
        },
      },
    );
    this.#services.events.on(WAKE_EVENT, this.#wakeAll);
    this.#unsubscribe = this.#services.store.signals?.subscribe(SIGNAL, () => this.#requestTick());
    // Resume: deliveries left pending by a stop or a crash, occurrences that fell due meanwhile.
    this.#requestTick();
  }

  /** One tick soon (at most one pending), then the wake-up timer armed. */
  #requestTick(): void {
    if (!this.#auto || this.#stopped || this.#tickRequested) return;
    this.#tickRequested = true;
    setImmediate(() => {
      this.#tickRequested = false;
      this.#tickThenArm();
    });
  }

  #tickThenArm(now?: number): void {
    this.tick(now)
      .then(() => this.#arm())
      .catch((err: unknown) => {
        if (!this.#stopped) this.#services.log.error('cron due check failed', err);
      });
  }

  /** Arms the timer for the earliest future wake-up within the minute (the minute tick covers the rest). */
  async #arm(): Promise<void> {
    if (!this.#auto || this.#stopped) return;
    const now = this.#services.clock.now();
    const [next] = await this.#tasks.query({ index: 'wake_at', gt: now, limit: 1 });
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
    this.#wakeTimer = null;
    if (!next || next.wake_at === null || next.wake_at - now > MINUTE || this.#stopped) return;
    this.#wakeTimer = setTimeout(() => {
      this.#wakeTimer = null;
      this.#requestTick();
    }, next.wake_at - now + 1);
    this.#wakeTimer.unref();
  }
}
