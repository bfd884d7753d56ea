/**
 * The transitions an agent steers a task with (issue 33): update, pause, resume, run now. Pure
 * functions of the record and `now`, applied inside one atomic `tasks.update` (./steer.ts), like
 * those of ./transitions.ts. Each answers the next record, undefined for "nothing to change", or
 * the ToolError that refuses it. docs/cron-tasks.md has the state table.
 */
import { ToolError } from '../../errors.js';
import { claimAt, pausedAt } from './model.js';
import type { Plan } from './plan.js';
import type { TaskRecord } from './records.js';
import { planned, reindexed, settled } from './transitions.js';

/** What a steering transition answers. */
export type Step = TaskRecord | undefined | ToolError;

const iso = (t: number): string => new Date(t).toISOString();

/** 409 for a task whose state does not allow the step. */
export function refused(t: Pick<TaskRecord, 'task_id'>, status: 'paused' | 'completed', what: string): ToolError {
  const hint = status === 'paused' ? 'resume it first' : 'update it with a new run_at or schedule first';
  return new ToolError('CONFLICT', `Task "${t.task_id}" is ${status}: cannot ${what}; ${hint}`, { task_id: t.task_id, status });
}

/** The changes of one update, validated; `undefined` = not given. */
export interface Changes {
  name?: string;
  plan?: Plan;
  timezone?: string;
  description?: string;
  tags?: string[];
  /** A new receiver (null: none), with the secret it gets if it differs from the current one. */
  callback?: { url: string | null; secret: string };
  max_retries?: number;
  /** null: never late. */
  grace_seconds?: number | null;
}

/**
 * An update. A new plan or zone makes a fresh occurrence: next_run_at is the first run after now
 * (after paused_until for a timed pause), retries start over, a completed one-shot is revived.
 * A new callback_url gets the new secret and drops the deliveries pending for the old one; the
 * current occurrence is announced to the new receiver (at once when it is due).
 */
export function applyUpdate(rec: TaskRecord, ch: Changes, now: number): { next: TaskRecord; secretIssued: boolean } {
  const cur = settled(rec, now);
  const next: TaskRecord = { ...cur, updated_at: iso(now) };
  if (ch.name !== undefined) next.name = ch.name;
  if (ch.description !== undefined) next.description = ch.description;
  if (ch.tags !== undefined) next.tags = ch.tags;
  if (ch.max_retries !== undefined) next.max_retries = ch.max_retries;
  // Applies to the current due stretch too: late_from is kept, so a task already due longer than the new grace is late now.
  if (ch.grace_seconds !== undefined) next.grace_seconds = ch.grace_seconds;
  let secretIssued = false;
  if (ch.callback !== undefined && ch.callback.url !== cur.callback_url) {
    secretIssued = ch.callback.url !== null;
    next.callback_url = ch.callback.url;
    next.callback_secret = secretIssued ? ch.callback.secret : null;
    next.webhooks = [];
    next.notify_at = ch.callback.url === null ? null : Date.parse(next.next_run_at);
  }
  const newPlan = ch.plan !== undefined && (ch.plan.schedule !== cur.schedule || ch.plan.run_at !== (cur.run_at ?? null));
  const newZone = ch.timezone !== undefined && ch.timezone !== cur.timezone;
  if (ch.plan !== undefined) {
    next.schedule = ch.plan.schedule;
    next.run_at = ch.plan.run_at;
  }
  if (ch.timezone !== undefined) next.timezone = ch.timezone;
  if (newPlan || newZone || (ch.plan !== undefined && cur.completed === true)) {
    next.completed = false;
    const after = next.paused === true && next.paused_until != null ? Date.parse(next.paused_until) : now;
    return { next: planned(next, after), secretIssued };
  }
  return { next: reindexed(next), secretIssued };
}

/**
 * Pause: never due, no webhook (pending deliveries are dropped) until resumed — by
 * cron_task_resume, or by itself at `until`: next_run_at is then already the first run after it.
 */
export function applyPause(rec: TaskRecord, until: number | null, now: number): Step {
  const cur = settled(rec, now);
  if (cur.completed === true) return refused(cur, 'completed', 'pause');
  const next: TaskRecord = { ...cur, paused: true, paused_until: until === null ? null : iso(until), webhooks: [], claim: null, updated_at: iso(now) };
  return keepClaim(rec, until === null ? reindexed(next) : planned(next, until), now);
}

/**
 * `next` still held by the live claim of `rec`, if any: pausing or resuming does not take a run
 * in progress away from its worker — its report with the run_id is accepted (recorded, with its
 * duration), and a lease that ends without one is logged lease_expired as always.
 */
function keepClaim(rec: TaskRecord, next: TaskRecord, now: number): TaskRecord {
  const held = claimAt(rec, now);
  return held ? reindexed({ ...next, claim: held }) : next;
}

/** Resume: the next run is the first after now; occurrences missed while paused are not replayed. */
export function applyResume(rec: TaskRecord, now: number): Step {
  if (!pausedAt(rec, now)) return undefined;
  return keepClaim(rec, planned({ ...rec, paused: false, paused_until: null, updated_at: iso(now) }, now), now);
}

/**
 * Run now: the task is due now, once (with its webhook); the schedule is untouched, so after the
 * report the task waits for its next fire time as usual. A task already due stays as it is.
 */
export function applyRunNow(rec: TaskRecord, now: number): Step {
  const cur = settled(rec, now);
  if (cur.completed === true) return refused(cur, 'completed', 'run now');
  if (pausedAt(cur, now)) return refused(cur, 'paused', 'run now');
  if (Date.parse(cur.next_run_at) <= now) return undefined;
  return reindexed({ ...cur, next_run_at: iso(now), retry_count: 0, notify_round: 0, notify_at: cur.callback_url === null ? null : now, late_from: now, updated_at: iso(now) });
}

/**
 * A claim of the due run by one worker, for `leaseMs`: only a due task can be claimed, and only
 * one claim holds at a time (the atomic update makes one of any number of simultaneous claims
 * win, on any instance). `runId` is the winner's proof when it reports.
 */
export function applyClaim(rec: TaskRecord, runId: string, leaseMs: number, now: number): Step {
  const cur = settled(rec, now);
  if (cur.completed === true) return refused(cur, 'completed', 'claim');
  if (pausedAt(cur, now)) return refused(cur, 'paused', 'claim');
  const held = claimAt(cur, now);
  if (held) {
    const expires = iso(held.lease_until);
    return new ToolError('CONFLICT', `Task "${cur.task_id}" is already claimed until ${expires}`, { task_id: cur.task_id, status: 'claimed', lease_expires_at: expires });
  }
  if (now < Date.parse(cur.next_run_at)) {
    return new ToolError('CONFLICT', `Task "${cur.task_id}" is not due (next run ${cur.next_run_at})`, { task_id: cur.task_id, status: 'scheduled', next_run_at: cur.next_run_at });
  }
  return reindexed({ ...cur, claim: { run_id: runId, lease_until: now + leaseMs, started_at: iso(now) }, updated_at: iso(now) });
}

/** A report naming `runId` must come from the current claim: a stale (lapsed, replaced) or foreign run_id is a 409. */
export function checkRun(cur: TaskRecord, runId: string, now: number): ToolError | null {
  const held = claimAt(cur, now);
  if (held?.run_id === runId) return null;
  return new ToolError('CONFLICT', `run_id "${runId}" does not hold task "${cur.task_id}" (stale or foreign)`, {
    task_id: cur.task_id,
    run_id: runId,
    ...(held ? { lease_expires_at: iso(held.lease_until) } : {}),
  });
}
