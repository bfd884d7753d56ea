/**
 * The due-check scheduler (serve mode only): queues one signed webhook per due occurrence of
 * every task with a callback_url (and one per retry after a reported failure), and delivers
 * them with retries. Everything it needs to resume lives in the task records, so a restart
 * picks up where a crash left off. docs/cron-tasks.md describes the scheme.
 *
 * The due check reads the `wake_at` index of the tasks collection — min(time the next webhook
 * is owed = next_run_at of the occurrence, next delivery attempt) — as one range query
 * `[0, now]`: its cost grows with the number of tasks that need work, not with all tasks.
 */
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import os from 'node:os';
import cron, { type ScheduledTask } from 'node-cron';
import type { Services } from '../../services.js';
import {
  appendLog,
  LIMITS,
  WAKE_EVENT,
  tasksOf,
  wakeAt,
  webhookId,
  type PendingWebhook,
  type TaskRecord,
} from './model.js';
import { attemptDelivery, defaultBackoff, DELIVERY_TIMEOUT_MS, dueBody, MAX_ATTEMPTS, webhookHeaders, type AttemptOutcome } from './webhook.js';

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
  | { type: 'attempt'; task_id: string; webhook_id: string; attempt: number; outcome: AttemptOutcome; final: boolean };

export interface TickResult {
  /** Webhooks newly queued by this tick. */
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
/** The store signal between the schedulers of instances sharing a store (see wakeAll, claim). */
const SIGNAL = 'cron-tasks:wake';

export function startScheduler(services: Services, opts: SchedulerOptions = {}): Scheduler {
  const { store, clock, fetcher, log } = services;
  const tasks = tasksOf(store);
  const auto = opts.timers ?? true;
  const backoff = opts.backoff ?? ((n: number) => defaultBackoff(n));
  // The fetcher caps every exchange at FETCH_TIMEOUT_MS: the attempt's real deadline.
  const timeoutMs = Math.min(opts.timeoutMs ?? DELIVERY_TIMEOUT_MS, services.config.fetchTimeoutMs);
  const maxAttempts = opts.maxAttempts ?? MAX_ATTEMPTS;
  const concurrency = opts.concurrency ?? 16;
  const batch = opts.batch ?? 1000;
  const leaseMs = opts.leaseMs ?? timeoutMs + 5000;
  const me = opts.instanceId ?? `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  const emit = (e: SchedulerEvent) => {
    try {
      opts.onEvent?.(e);
    } catch {
      // an observer's failure is not ours
    }
  };

  const inflight = new Map<string, Promise<void>>();
  const abort = new AbortController();
  // Every attempt in flight listens on it.
  setMaxListeners(0, abort.signal);
  let stopped = false;
  let chain: Promise<unknown> = Promise.resolve();
  let tickRequested = false;
  let wakeTimer: NodeJS.Timeout | null = null;
  let cronTask: ScheduledTask | null = null;
  let unsubscribe: (() => void) | undefined;

  /** Turns an owed notification into a pending webhook, atomically; returns the record. */
  const enqueue = async (t: TaskRecord, now: number): Promise<{ record: TaskRecord | undefined; added: boolean }> => {
    let added: PendingWebhook | undefined;
    let dropped: PendingWebhook[] = [];
    const u = await tasks.update(t.task_id, (cur) => {
      added = undefined;
      dropped = [];
      if (!cur || cur.notify_at === null || cur.notify_at > now) return undefined;
      const webhooks = [...cur.webhooks];
      if (cur.callback_url !== null) {
        const id = webhookId(cur.task_id, cur.next_run_at, cur.notify_round);
        if (!webhooks.some((w) => w.id === id)) {
          added = { id, scheduled_for: cur.next_run_at, body: dueBody(cur, cur.next_run_at, now), attempt: 0, next_attempt_at: now };
          webhooks.push(added);
        }
        while (webhooks.length > LIMITS.pendingWebhooks) dropped.push(webhooks.shift()!);
      }
      const next: TaskRecord = { ...cur, notify_at: null, webhooks };
      next.wake_at = wakeAt(next);
      return next;
      // Lazy: lost in a crash, the notification is still owed on disk and is queued again after
      // the restart under the same webhook-id (receivers dedupe on it, per Standard Webhooks).
    }, { durability: 'lazy' });
    if (u && added) emit({ type: 'queued', task_id: u.task_id, webhook_id: added.id, scheduled_for: added.scheduled_for });
    if (u) {
      for (const d of dropped) {
        await appendLog(store, u, {
          status: 'webhook_failed',
          message: `Dropped after ${d.attempt} attempt(s): more than ${LIMITS.pendingWebhooks} deliveries pending (webhook ${d.id})`,
          attempt: d.attempt,
          at: now,
        });
      }
    }
    return { record: u, added: added !== undefined };
  };

  /**
   * A lease expired or absent at `at`: the attempt may be started. On a single-process store
   * (the file store's lock) a lease held by another scheduler is a previous run's, cut off by a
   * crash: free at once, as before leases existed.
   */
  const shared = store.signals !== undefined;
  const free = (w: PendingWebhook, at: number) => w.lease_until === undefined || w.lease_until <= at || (!shared && w.lease_by !== me);

  /**
   * Claims the next attempt of webhook `id`: one atomic update that succeeds for one scheduler
   * only (in this process or any other sharing the store), until the lease ends.
   */
  const claim = async (taskId: string, id: string): Promise<{ task: TaskRecord; webhook: PendingWebhook } | undefined> => {
    let claimed: PendingWebhook | undefined;
    const t = await tasks.update(
      taskId,
      (cur) => {
        claimed = undefined;
        if (!cur || cur.callback_url === null || cur.callback_secret === null) return undefined;
        const i = cur.webhooks.findIndex((x) => x.id === id);
        const w = cur.webhooks[i];
        const at = clock.now();
        if (!w || w.next_attempt_at > at || !free(w, at)) return undefined;
        const webhooks = [...cur.webhooks];
        claimed = webhooks[i] = { ...w, lease_until: at + leaseMs, lease_by: me };
        const next: TaskRecord = { ...cur, webhooks };
        next.wake_at = wakeAt(next);
        return next;
      },
      // Lost in a crash, the claim only delays nothing: the attempt is owed and made again.
      { durability: 'lazy' },
    );
    // The other instances (sharing a Redis) arm their timers for the lease's end: a takeover then needs no minute tick.
    if (t && claimed) store.signals?.publish(SIGNAL);
    return t && claimed ? { task: t, webhook: claimed } : undefined;
  };

  /** Gives a claimed attempt back (stopping): another scheduler may make it at once. */
  const release = async (taskId: string, id: string): Promise<void> => {
    await tasks.update(taskId, (cur) => {
      const i = cur?.webhooks.findIndex((x) => x.id === id && x.lease_by === me) ?? -1;
      if (!cur || i < 0) return undefined;
      const webhooks = [...cur.webhooks];
      const { lease_until: _u, lease_by: _b, ...w } = webhooks[i]!;
      webhooks[i] = w;
      const next: TaskRecord = { ...cur, webhooks };
      next.wake_at = wakeAt(next);
      return next;
    });
  };

  const deliver = async (taskId: string, id: string): Promise<void> => {
    const c = await claim(taskId, id);
    if (!c) return;
    const { task: t, webhook: w } = c;
    const outcome = await attemptDelivery(fetcher, t.callback_url!, webhookHeaders(t.callback_secret!, id, clock.now(), w.body), w.body, {
      timeoutMs,
      signal: abort.signal,
    });
    // Stopping: this attempt does not count; it is made again (here after a restart, or by another instance).
    if (abort.signal.aborted) {
      await release(taskId, id).catch(() => {});
      return;
    }
    const attempt = w.attempt + 1;
    const final = outcome.ok || !outcome.retryable || attempt >= maxAttempts;
    const at = clock.now();
    const delay = final ? 0 : Math.max(0, backoff(attempt));
    let found = false;
    const u = await tasks.update(taskId, (cur) => {
      found = false;
      if (!cur) return undefined;
      const i = cur.webhooks.findIndex((x) => x.id === id);
      // Gone, or taken over by another instance after our lease ended: its attempt counts, not ours.
      if (i < 0 || cur.webhooks[i]!.lease_by !== me) return undefined;
      found = true;
      const webhooks = [...cur.webhooks];
      const { lease_until: _u, lease_by: _b, ...rest } = webhooks[i]!;
      if (final) webhooks.splice(i, 1);
      else webhooks[i] = { ...rest, attempt, next_attempt_at: at + delay };
      const next: TaskRecord = { ...cur, webhooks };
      next.wake_at = wakeAt(next);
      return next;
    });
    // Deleted meanwhile (its logs went with it), or dropped for a newer occurrence.
    if (!u || !found) return;
    let message: string;
    if (outcome.ok) message = `Delivered: ${outcome.message} (webhook ${id})`;
    else if (!outcome.retryable) message = `${outcome.message}; not retried (webhook ${id})`;
    else if (final) message = `${outcome.message}; gave up after ${attempt} attempts (webhook ${id})`;
    else message = `${outcome.message}; attempt ${attempt} of ${maxAttempts}, next in ${Math.ceil(delay / 1000)}s (webhook ${id})`;
    await appendLog(store, u, { status: outcome.ok ? 'webhook_ok' : 'webhook_failed', message, attempt, at });
    emit({ type: 'attempt', task_id: taskId, webhook_id: id, attempt, outcome, final });
  };

  const start = (taskId: string, id: string): void => {
    const p = deliver(taskId, id)
      .catch((err: unknown) => {
        if (!stopped) log.error(`cron webhook ${id} of task ${taskId}`, err);
      })
      .finally(() => {
        inflight.delete(id);
        requestTick();
      });
    inflight.set(id, p);
  };

  const runTick = async (now: number): Promise<TickResult> => {
    if (stopped) return { queued: 0, started: 0 };
    const ready = await tasks.query({ index: 'wake_at', gte: 0, lte: now, limit: batch });
    let queued = 0;
    const current = await Promise.all(
      ready.map(async (t) => {
        if (t.notify_at === null || t.notify_at > now) return t;
        const { record, added } = await enqueue(t, now);
        if (added) queued++;
        return record;
      }),
    );
    let started = 0;
    for (const t of current) {
      if (!t) continue;
      for (const w of t.webhooks) {
        if (w.next_attempt_at > now || !free(w, now) || inflight.has(w.id) || inflight.size >= concurrency || stopped) continue;
        start(t.task_id, w.id);
        started++;
      }
    }
    if (ready.length >= batch) requestTick();
    return { queued, started };
  };

  const tick = (now?: number): Promise<TickResult> => {
    const run = chain.then(() => runTick(now ?? clock.now()));
    chain = run.catch(() => undefined);
    return run;
  };

  /** Arms the timer for the earliest future wake-up within the minute (cron covers the rest). */
  const arm = async (): Promise<void> => {
    if (!auto || stopped) return;
    const now = clock.now();
    const [next] = await tasks.query({ index: 'wake_at', gt: now, limit: 1 });
    if (wakeTimer) clearTimeout(wakeTimer);
    wakeTimer = null;
    if (!next || next.wake_at === null || next.wake_at - now > MINUTE || stopped) return;
    wakeTimer = setTimeout(() => {
      wakeTimer = null;
      requestTick();
    }, next.wake_at - now + 1);
    wakeTimer.unref();
  };

  /** A wake-up of this process (a create or report owing a webhook now): the other instances check too. */
  function wakeAll(): void {
    store.signals?.publish(SIGNAL);
    requestTick();
  }

  function requestTick(): void {
    if (!auto || stopped || tickRequested) return;
    tickRequested = true;
    setImmediate(() => {
      tickRequested = false;
      tick()
        .then(arm)
        .catch((err: unknown) => {
          if (!stopped) log.error('cron due check failed', err);
        });
    });
  }

  if (auto) {
    cronTask = cron.schedule(
      '* * * * *',
      (ctx) => {
        // node-cron may fire a hair before the minute: never check earlier than the minute it fires for.
        const now = Math.max(clock.now(), ctx.date.getTime());
        tick(now)
          .then(arm)
          .catch((err: unknown) => {
            if (!stopped) log.error('cron due check failed', err);
          });
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
    services.events.on(WAKE_EVENT, wakeAll);
    unsubscribe = store.signals?.subscribe(SIGNAL, requestTick);
    // Resume: deliveries left pending by a stop or a crash, occurrences that fell due meanwhile.
    requestTick();
  }

  const scheduler: Scheduler = {
    tick,
    async settle() {
      while (inflight.size > 0) await Promise.allSettled([...inflight.values()]);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      services.events.off(WAKE_EVENT, wakeAll);
      unsubscribe?.();
      if (wakeTimer) clearTimeout(wakeTimer);
      wakeTimer = null;
      if (cronTask) await cronTask.destroy();
      cronTask = null;
      abort.abort();
      await Promise.allSettled([...inflight.values()]);
      await chain;
    },
  };
  services.closers.push(() => scheduler.stop());
  return scheduler;
}
