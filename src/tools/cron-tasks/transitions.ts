/**
 * The transitions of a task record, as pure functions of the record and `now`: a report, an
 * occurrence falling due (its webhook queued), a delivery attempt claimed, given back, and
 * recorded (delivered, retried later, given up). The tools and the scheduler apply them inside
 * one atomic `tasks.update`, so the same step is safe on every backend and across instances;
 * a transition that does not apply answers undefined and the update writes nothing.
 * docs/cron-tasks.md describes the lifecycle.
 */
import { nextFire } from '../../lib/cron.js';
import { agentNext, agentNextIdle, lateOwedAt, lateWebhookId, LIMITS, pausedAt, statusAt, wakeAt, webhookId } from './model.js';
import type { Claim, LogStatus, PendingWebhook, TaskRecord } from './records.js';
import { dueBody, lateBody, type AttemptOutcome } from './webhook.js';

/** The record with new pending webhooks and the scheduler's index (wake_at) to match. */
function withWebhooks(cur: TaskRecord, webhooks: PendingWebhook[]): TaskRecord {
  const next: TaskRecord = { ...cur, webhooks };
  next.wake_at = wakeAt(next);
  return next;
}

const iso = (t: number): string => new Date(t).toISOString();

/** Never due: completed, or paused with no time to resume by itself. */
function idle(t: TaskRecord): 'completed' | 'paused' | null {
  if (t.completed === true) return 'completed';
  return t.paused === true && t.paused_until == null ? 'paused' : null;
}

/**
 * The record with its derived fields to match: agent_next (an idle task sorts after every time,
 * out of the due range), no notification owed while idle, and wake_at.
 */
export function reindexed(t: TaskRecord): TaskRecord {
  const why = idle(t);
  // A claimed task is out of the due range until its lease ends: then it is due again.
  const at = t.claim != null ? iso(Math.max(t.claim.lease_until, Date.parse(t.next_run_at))) : t.next_run_at;
  const next: TaskRecord = { ...t, agent_next: why === null ? agentNext(t.owner_agent, at) : agentNextIdle(t.owner_agent, why) };
  if (why !== null) next.notify_at = null;
  next.wake_at = wakeAt(next);
  return next;
}

/** A timed pause that has ended is cleared (nothing was written when it ended: see records.ts). */
export function settled(t: TaskRecord, now: number): TaskRecord {
  return t.paused === true && !pausedAt(t, now) ? { ...t, paused: false, paused_until: null } : t;
}

/**
 * The task waiting for its first run after `after` — the schedule's next fire time, or a
 * one-shot's run_at (past or not: then it is due; under a timed pause, not before its end) —
 * as a fresh occurrence with its webhook owed.
 */
export function planned(t: TaskRecord, after: number): TaskRecord {
  const next = t.schedule === null ? oneShotAt(t) : nextFire(t.schedule, t.timezone, after);
  return reindexed({ ...t, next_run_at: iso(next), retry_count: 0, notify_round: 0, notify_at: t.callback_url === null ? null : next, claim: null, late_from: next, late_noticed: null });
}

/**
 * A one-shot's run: its run_at, or the end of a timed pause that is later (session 24's
 * review: a one-shot paused past its run_at kept a past run_at — its webhook was sent while
 * paused, and a late notice owed since then kept it at the front of every due check).
 */
function oneShotAt(t: TaskRecord): number {
  const at = Date.parse(t.run_at!);
  return t.paused === true && t.paused_until != null ? Math.max(at, Date.parse(t.paused_until)) : at;
}

/** What expireClaim did: the record (the claim's end applied as a failed report) and the claim that lapsed. */
export interface Expiry {
  next: TaskRecord;
  expired: Claim | null;
  /** The run attempt that failed (1 = first try). */
  attempt: number;
  /** Counted as a failed attempt (retries were left); otherwise the occurrence is just due again. */
  counted: boolean;
}

/**
 * A claim whose lease ended without a report makes the task due again, as of the lease's end
 * (so whoever applies it — the scheduler, or the next call on the task — writes the same
 * record). While retries are left it counts as a failed attempt (retrying, its retry webhook
 * owed). With none left (max_retries 0, or all used) the same occurrence is simply due again:
 * a claimant that died reported nothing, and only a report ends an occurrence — an unclaimed
 * due task stays due until reported too, so a crash never loses a run (docs/cron-tasks.md).
 */
export function expireClaim(t: TaskRecord, now: number): Expiry {
  if (t.claim == null || t.claim.lease_until > now) return { next: t, expired: null, attempt: 0, counted: false };
  const end = t.claim.lease_until;
  const cur = settled(t, end);
  if (cur.retry_count < cur.max_retries || pausedAt(cur, end)) {
    const r = applyReport(t, 'failed', end);
    return { next: r.next, expired: t.claim, attempt: r.attempt, counted: true };
  }
  // Due again from the lease's end: a new stretch of lateness (announced once per occurrence all the same).
  return { next: reindexed({ ...cur, claim: null, updated_at: iso(end), late_from: end }), expired: t.claim, attempt: cur.retry_count + 1, counted: false };
}

export interface Retry {
  /** true when the failure will be retried: the task stays due (status retrying). */
  scheduled: boolean;
  /** The retry number now pending (1 = first retry), 0 when none is. */
  attempt: number;
  max_retries: number;
}

/**
 * One report (docs/contract.md §3): the next record, the run attempt that was reported
 * (1 = first try) and what happens next.
 */
export function applyReport(rec: TaskRecord, status: 'done' | 'failed', now: number): { next: TaskRecord; attempt: number; retry: Retry } {
  const cur = settled(rec, now);
  const attempt = cur.retry_count + 1;
  const at = iso(now);
  const hooks = cur.callback_url !== null;
  const base = { ...cur, last_run_at: at, updated_at: at, claim: null };
  const paused = pausedAt(cur, now);
  let next: TaskRecord;
  let retry: Retry;
  // A paused task records the report but is not retried: the pause decides when it runs next.
  if (status === 'failed' && cur.retry_count < cur.max_retries && !paused) {
    // Stays due: next_run_at is not moved forward (pulled back to now for an early report).
    const nextRun = Math.min(Date.parse(cur.next_run_at), now);
    // The retry is due from now: it turns late grace_seconds after this report if nobody takes it.
    next = { ...base, retry_count: cur.retry_count + 1, next_run_at: iso(nextRun), notify_at: hooks ? now : null, notify_round: cur.retry_count + 1, late_from: now };
    retry = { scheduled: true, attempt: cur.retry_count + 1, max_retries: cur.max_retries };
  } else {
    const ended = { ...base, retry_count: 0, run_count: status === 'done' ? cur.run_count + 1 : cur.run_count, last_status: status, notify_round: 0 };
    if (paused) next = ended;
    // A one-shot task has run: completed, never due again (kept for its logs until deleted).
    else if (cur.schedule === null) next = { ...ended, completed: true };
    else {
      const fire = nextFire(cur.schedule, cur.timezone, now);
      next = { ...ended, next_run_at: iso(fire), notify_at: hooks ? fire : null, late_from: fire, late_noticed: null };
    }
    retry = { scheduled: false, attempt: 0, max_retries: cur.max_retries };
  }
  return { next: reindexed(next), attempt, retry };
}

/** What queueDue did: the webhook it added (none if already queued or no callback) and those it dropped. */
export interface Queued {
  next: TaskRecord;
  added: PendingWebhook | undefined;
  dropped: PendingWebhook[];
}

/**
 * The occurrence (or retry) whose notification is owed by `now` gets its webhook queued, once:
 * the id is derived from (task, occurrence, round), so queuing again adds nothing. Beyond
 * LIMITS.pendingWebhooks the oldest deliveries are dropped. Undefined when nothing is owed.
 */
export function queueDue(cur: TaskRecord | undefined, now: number): Queued | undefined {
  if (!cur || cur.notify_at === null || cur.notify_at > now) return undefined;
  const webhooks = [...cur.webhooks];
  let added: PendingWebhook | undefined;
  const dropped: PendingWebhook[] = [];
  if (cur.callback_url !== null) {
    const id = webhookId(cur.task_id, cur.next_run_at, cur.notify_round);
    if (!webhooks.some((w) => w.id === id)) {
      added = { id, scheduled_for: cur.next_run_at, body: dueBody(cur, cur.next_run_at, now), attempt: 0, next_attempt_at: now };
      webhooks.push(added);
    }
    while (webhooks.length > LIMITS.pendingWebhooks) dropped.push(webhooks.shift()!);
  }
  return { next: withWebhooks({ ...cur, notify_at: null }, webhooks), added, dropped };
}

/** What queueLate did: the record with the occurrence noticed late, the webhook it added (with a callback_url) and those it dropped. */
export interface LateNotice extends Queued {
  /** When the task turned late (ms). */
  since: number;
  /** The run attempt that is late (1 = first try) and the grace it had, as of the notice. */
  attempt: number;
  grace_seconds: number;
}

/**
 * The current occurrence turned late (grace_seconds passed without a claim or report): noticed
 * once — late_noticed holds the occurrence, so applying this again, on any instance, changes
 * nothing — with its `cron_task.late` webhook queued when the task has a callback_url. The id is
 * derived from (task, occurrence, 'late'). Undefined when nothing is owed by `now`.
 */
export function queueLate(cur: TaskRecord | undefined, now: number): LateNotice | undefined {
  const since = cur ? lateOwedAt(cur) : null;
  if (!cur || since === null || since > now || statusAt(cur, now) !== 'late') return undefined;
  const webhooks = [...cur.webhooks];
  let added: PendingWebhook | undefined;
  const dropped: PendingWebhook[] = [];
  if (cur.callback_url !== null) {
    const id = lateWebhookId(cur.task_id, cur.next_run_at);
    if (!webhooks.some((w) => w.id === id)) {
      added = { id, scheduled_for: cur.next_run_at, body: lateBody(cur, cur.next_run_at, since, now), attempt: 0, next_attempt_at: now, owed_at: since };
      webhooks.push(added);
    }
    while (webhooks.length > LIMITS.pendingWebhooks) dropped.push(webhooks.shift()!);
  }
  return { next: withWebhooks({ ...cur, late_noticed: cur.next_run_at }, webhooks), added, dropped, since, attempt: cur.retry_count + 1, grace_seconds: cur.grace_seconds ?? 0 };
}

/** The log line of a late notice. */
export function lateMessage(n: LateNotice): string {
  const hook = n.added ? ` (webhook ${n.added.id})` : '';
  return `Not claimed or reported within grace_seconds (${n.grace_seconds}s); late since ${iso(n.since)}${hook}`;
}

/** The log line of a delivery dropped by queueDue. */
export function droppedMessage(d: PendingWebhook): string {
  return `Dropped after ${d.attempt} attempt(s): more than ${LIMITS.pendingWebhooks} deliveries pending (webhook ${d.id})`;
}

/** Who claims attempts, for how long, and whether other processes share the store. */
export interface Lease {
  by: string;
  ms: number;
  /**
   * false on a single-process store (the file store's lock): a lease held by another scheduler
   * is then a previous run's, cut off by a crash, and free at once (as before leases existed).
   */
  shared: boolean;
}

/** No lease holds the attempt at `at`: it may be started. */
export function leaseFree(w: PendingWebhook, at: number, lease: Lease): boolean {
  return w.lease_until === undefined || w.lease_until <= at || (!lease.shared && w.lease_by !== lease.by);
}

/** The webhooks of a record whose next attempt may start at `now`. */
export function startable(t: TaskRecord, now: number, lease: Lease): PendingWebhook[] {
  return t.webhooks.filter((w) => w.next_attempt_at <= now && leaseFree(w, now, lease));
}

/**
 * The next attempt of webhook `id`, leased to `lease.by` until `now + lease.ms`: no other
 * scheduler starts it meanwhile. Undefined when the task cannot deliver, the webhook is gone,
 * not yet due, or leased to someone else.
 */
export function claimAttempt(cur: TaskRecord | undefined, id: string, now: number, lease: Lease): { next: TaskRecord; webhook: PendingWebhook } | undefined {
  if (!cur || cur.callback_url === null || cur.callback_secret === null) return undefined;
  const i = cur.webhooks.findIndex((x) => x.id === id);
  const w = cur.webhooks[i];
  if (!w || w.next_attempt_at > now || !leaseFree(w, now, lease)) return undefined;
  const webhooks = [...cur.webhooks];
  const webhook = (webhooks[i] = { ...w, lease_until: now + lease.ms, lease_by: lease.by });
  return { next: withWebhooks(cur, webhooks), webhook };
}

/** Webhook `id` without `by`'s lease (a stopping scheduler gives its attempt back); undefined if `by` holds none. */
export function releaseAttempt(cur: TaskRecord | undefined, id: string, by: string): TaskRecord | undefined {
  const i = cur?.webhooks.findIndex((x) => x.id === id && x.lease_by === by) ?? -1;
  if (!cur || i < 0) return undefined;
  const webhooks = [...cur.webhooks];
  const { lease_until: _u, lease_by: _b, ...w } = webhooks[i]!;
  webhooks[i] = w;
  return withWebhooks(cur, webhooks);
}

/** What one finished attempt means for its webhook. */
export interface Verdict {
  /** Attempts made, this one included. */
  attempt: number;
  /** No further attempt: delivered, refused for good, or the last one allowed. */
  final: boolean;
  /** Delay before the next attempt (0 when final). */
  delay: number;
  status: Extract<LogStatus, 'webhook_ok' | 'webhook_failed'>;
  message: string;
}

/**
 * Judges an attempt of `w` that ended with `outcome`. `backoff(n)` (the delay after n failed
 * attempts) is asked only when another attempt follows.
 */
export function judgeAttempt(
  w: Pick<PendingWebhook, 'id' | 'attempt'>,
  outcome: AttemptOutcome,
  policy: { maxAttempts: number; backoff: (attempt: number) => number },
): Verdict {
  const attempt = w.attempt + 1;
  const final = outcome.ok || !outcome.retryable || attempt >= policy.maxAttempts;
  const delay = final ? 0 : Math.max(0, policy.backoff(attempt));
  let message: string;
  if (outcome.ok) message = `Delivered: ${outcome.message} (webhook ${w.id})`;
  else if (!outcome.retryable) message = `${outcome.message}; not retried (webhook ${w.id})`;
  else if (final) message = `${outcome.message}; gave up after ${attempt} attempts (webhook ${w.id})`;
  else message = `${outcome.message}; attempt ${attempt} of ${policy.maxAttempts}, next in ${Math.ceil(delay / 1000)}s (webhook ${w.id})`;
  return { attempt, final, delay, status: outcome.ok ? 'webhook_ok' : 'webhook_failed', message };
}

/**
 * Records a judged attempt of webhook `id` made under `by`'s lease, at `now`: a final one
 * leaves the queue, another is due again after its delay (same id, so the same webhook-id).
 * Undefined when the webhook is gone (deleted, dropped for a newer occurrence) or was taken
 * over by another scheduler after the lease ended: its attempt counts, not this one.
 */
export function recordAttempt(cur: TaskRecord | undefined, id: string, by: string, verdict: Verdict, now: number): TaskRecord | undefined {
  const i = cur?.webhooks.findIndex((x) => x.id === id) ?? -1;
  if (!cur || i < 0 || cur.webhooks[i]!.lease_by !== by) return undefined;
  const webhooks = [...cur.webhooks];
  const { lease_until: _u, lease_by: _b, ...rest } = webhooks[i]!;
  if (verdict.final) webhooks.splice(i, 1);
  else webhooks[i] = { ...rest, attempt: verdict.attempt, next_attempt_at: now + verdict.delay };
  return withWebhooks(cur, webhooks);
}
