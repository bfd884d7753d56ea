/**
 * The webhook attempts one scheduler has in flight: each claims its attempt under a lease,
 * POSTs, and records the verdict, every record change being a transition of ./transitions.ts
 * applied in one atomic update. Stopping aborts the attempts in flight and gives them back.
 */
import { setMaxListeners } from 'node:events';
import type { Services } from '../../services.js';
import type { Collection } from '../../state/index.js';
import { appendLog } from './model.js';
import type { PendingWebhook, TaskRecord } from './records.js';
import { claimAttempt, judgeAttempt, recordAttempt, releaseAttempt, type Lease } from './transitions.js';
import { attemptDelivery, webhookHeaders, type AttemptOutcome } from './webhook.js';

/** An attempt recorded (one of the scheduler's events). */
export interface AttemptEvent {
  type: 'attempt';
  task_id: string;
  webhook_id: string;
  attempt: number;
  outcome: AttemptOutcome;
  final: boolean;
}

/** What the attempts need besides the services (resolved from SchedulerOptions). */
export interface DeliverySettings {
  lease: Lease;
  timeoutMs: number;
  maxAttempts: number;
  backoff: (attempt: number) => number;
  /** The signal between instances sharing the store: published when an attempt is claimed. */
  signal: string;
  emit: (e: AttemptEvent) => void;
  /** Called when an attempt ends, whatever its outcome: its slot is free again. */
  onEnd: () => void;
}

/** The attempts in flight of one scheduler, with the lease, deadline and retry policy they run under. */
export class Deliveries {
  readonly #inflight = new Map<string, Promise<void>>();
  readonly #abort = new AbortController();
  readonly #services: Pick<Services, 'store' | 'clock' | 'fetcher' | 'log' | 'metrics'>;
  readonly #tasks: Collection<TaskRecord>;
  readonly #settings: DeliverySettings;

  constructor(services: Pick<Services, 'store' | 'clock' | 'fetcher' | 'log' | 'metrics'>, tasks: Collection<TaskRecord>, settings: DeliverySettings) {
    this.#services = services;
    this.#tasks = tasks;
    this.#settings = settings;
    // Every attempt in flight listens on it.
    setMaxListeners(0, this.#abort.signal);
  }

  /** Attempts in flight. */
  get size(): number {
    return this.#inflight.size;
  }

  has(id: string): boolean {
    return this.#inflight.has(id);
  }

  /** Starts an attempt of webhook `id`; it runs on until it ends or stop() cuts it off. */
  start(taskId: string, id: string): void {
    const p = this.#deliver(taskId, id)
      .catch((err: unknown) => {
        if (!this.#abort.signal.aborted) this.#services.log.error(`cron webhook ${id} of task ${taskId}`, err);
      })
      .finally(() => {
        this.#inflight.delete(id);
        this.#settings.onEnd();
      });
    this.#inflight.set(id, p);
  }

  /** Resolves when no attempt is in flight. */
  async settle(): Promise<void> {
    while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight.values()]);
  }

  /** Aborts the attempts in flight (they are made again, here after a restart or by another instance). */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled([...this.#inflight.values()]);
  }

  async #deliver(taskId: string, id: string): Promise<void> {
    const c = await this.#claim(taskId, id);
    if (!c) return;
    const { task: t, webhook: w } = c;
    const { fetcher, clock } = this.#services;
    // Behind the occurrence itself (a late notice: the moment it turned late) for a first attempt, behind the backoff's end for a retry.
    this.#services.metrics.schedulerLag((clock.now() - (w.attempt === 0 ? (w.owed_at ?? Date.parse(w.scheduled_for)) : w.next_attempt_at)) / 1000);
    const outcome = await attemptDelivery(fetcher, t.callback_url!, webhookHeaders(t.callback_secret!, id, clock.now(), w.body), w.body, {
      timeoutMs: this.#settings.timeoutMs,
      signal: this.#abort.signal,
    });
    // Stopping: this attempt does not count; it is made again (here after a restart, or by another instance).
    if (this.#abort.signal.aborted) {
      await this.#tasks.update(taskId, (cur) => releaseAttempt(cur, id, this.#settings.lease.by)).catch(() => {});
      return;
    }
    const verdict = judgeAttempt(w, outcome, this.#settings);
    this.#services.metrics.delivery(outcome.ok ? 'ok' : verdict.final ? 'gave_up' : 'retry');
    const at = clock.now();
    let recorded = false;
    const u = await this.#tasks.update(taskId, (cur) => {
      const next = recordAttempt(cur, id, this.#settings.lease.by, verdict, at);
      recorded = next !== undefined;
      return next;
    });
    // Deleted meanwhile (its logs went with it), dropped for a newer occurrence, or taken over.
    if (!u || !recorded) return;
    await appendLog(this.#services.store, u, { status: verdict.status, message: verdict.message, attempt: verdict.attempt, at });
    this.#settings.emit({ type: 'attempt', task_id: taskId, webhook_id: id, attempt: verdict.attempt, outcome, final: verdict.final });
  }

  /**
   * Claims the next attempt of webhook `id`: one atomic update that succeeds for one scheduler
   * only (in this process or any other sharing the store), until the lease ends.
   */
  async #claim(taskId: string, id: string): Promise<{ task: TaskRecord; webhook: PendingWebhook } | undefined> {
    let claimed: PendingWebhook | undefined;
    const t = await this.#tasks.update(
      taskId,
      (cur) => {
        const c = claimAttempt(cur, id, this.#services.clock.now(), this.#settings.lease);
        claimed = c?.webhook;
        return c?.next;
      },
      // Lost in a crash, the claim only delays nothing: the attempt is owed and made again.
      { durability: 'lazy' },
    );
    if (!t || !claimed) return undefined;
    // The other instances (sharing a Redis) arm their timers for the lease's end: a takeover then needs no minute tick.
    this.#services.store.signals?.publish(this.#settings.signal);
    return { task: t, webhook: claimed };
  }
}
