/**
 * The cron task model: the stored records (./records.ts) as callers see them, ownership, ids,
 * the fields derived from a record (status, wake_at) and the logs. The record's transitions
 * are in ./transitions.ts; the seven tools and the scheduler (./scheduler.ts) work through
 * both. docs/cron-tasks.md describes the lifecycle.
 */
import { createHash, randomBytes } from 'node:crypto';
import { ToolError } from '../../errors.js';
import type { Caller } from '../../registry.js';
import type { Services } from '../../services.js';
import type { Collection, Store } from '../../state/index.js';
import { LOGS, TASKS } from './stored.js';
import type { LastStatus, LogRecord, LogStatus, TaskRecord, TaskStatus } from './records.js';

/** Bounds (docs/cron-tasks.md). */
export const LIMITS = {
  agentId: 64,
  taskId: 64,
  name: 200,
  description: 2000,
  tags: 20,
  tag: 50,
  schedule: 200,
  callbackUrl: 2048,
  message: 2000,
  maxRetries: 10,
  /** grace_seconds: at most a day. */
  graceSeconds: 86_400,
  /** Tasks one (owner, agent) may hold. */
  tasksPerAgent: 500,
  /** Log entries kept per task; older ones are dropped as new ones arrive. */
  logsPerTask: 100,
  /** Deliveries in flight per task; a new occurrence beyond this drops the oldest. */
  pendingWebhooks: 5,
} as const;

export const AGENT_ID_PATTERN = /^[A-Za-z0-9._:@-]+$/;
export const TASK_ID_PATTERN = /^[A-Za-z0-9_-]+$/;
export const DEFAULT_AGENT = 'default';

export type { LastStatus, LogRecord, LogStatus, PendingWebhook, TaskRecord, TaskStatus } from './records.js';

/** What callers see of a task: its public fields and the status computed when read. */
export type PublicTask = Pick<
  TaskRecord,
  'task_id' | 'agent_id' | 'name' | 'schedule' | 'timezone' | 'description' | 'tags' | 'callback_url' | 'max_retries' | 'retry_count' | 'run_count' | 'last_run_at' | 'last_status' | 'next_run_at' | 'created_at' | 'updated_at'
> & { status: TaskStatus; run_at?: string; paused_until?: string; lease_expires_at?: string; grace_seconds?: number };

export type PublicLog = Omit<LogRecord, 'owner_agent'>;

export { LOGS, TASKS };

export const tasksOf = (store: Store): Collection<TaskRecord> => store.collection(TASKS);
export const logsOf = (store: Store): Collection<LogRecord> => store.collection(LOGS);

/**
 * A key owns its own tasks; a keyless caller's tasks belong to its client address (the one its
 * calls are counted under: IPv6 by /64), so another keyless caller never reaches them. The
 * address is stored hashed, like the rate limiter's owner keys.
 */
export function ownerOf(caller: Pick<Caller, 'keyId' | 'ip'>): string {
  if (caller.keyId === null) return `ip:${createHash('sha256').update(caller.ip).digest('hex').slice(0, 32)}`;
  // Index keys are built as owner|agent|time: a key id that could hold '|' is hashed first.
  if (/^[A-Za-z0-9_-]{1,64}$/.test(caller.keyId)) return `key:${caller.keyId}`;
  return `keyh:${createHash('sha256').update(caller.keyId).digest('hex').slice(0, 32)}`;
}

export function ownerAgent(caller: Pick<Caller, 'keyId' | 'ip'>, agentId: string): string {
  return `${ownerOf(caller)}|${agentId}`;
}

/** agent_next of a record. ISO times of one length sort as the instants they name. */
export function agentNext(ownerAgentKey: string, nextRunAt: string): string {
  return `${ownerAgentKey}|${nextRunAt}`;
}

/**
 * agent_next of a task that is never due: after every ISO time (digits sort before letters),
 * so a due list (the range up to now) leaves it out and the full list shows it last.
 */
export function agentNextIdle(ownerAgentKey: string, why: 'completed' | 'paused'): string {
  return `${ownerAgentKey}|${why}`;
}

/**
 * The agent_next range of one (owner, agent): every task, or (with `dueAt`) those whose
 * next_run_at is at or before it — soonest first either way. Agent ids cannot hold '|', and
 * '}' is the character after it, so the range holds exactly this agent's tasks.
 */
export function agentRange(ownerAgentKey: string, dueAt?: number): { index: 'agent_next'; gte: string; lt?: string; lte?: string } {
  const from = `${ownerAgentKey}|`;
  return dueAt === undefined ? { index: 'agent_next', gte: from, lt: `${ownerAgentKey}}` } : { index: 'agent_next', gte: from, lte: `${from}${new Date(dueAt).toISOString()}` };
}

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      // 248 = 4 × 62: rejecting the bytes above keeps every character equally likely.
      if (b < 248 && out.length < n) out += BASE62[b % 62];
    }
  }
  return out;
}

export const ids = {
  task(): string {
    return `task_${randomBase62(16)}`;
  },
  /** A claim's run id: unguessable, so a report with it proves it comes from the claimant. */
  run(): string {
    return `run_${randomBase62(20)}`;
  },
  /** `whsec_` + base64 of 32 random bytes (Standard Webhooks secret format). */
  secret(): string {
    return `whsec_${randomBytes(32).toString('base64')}`;
  },
};

let lastLogMs = 0;
let logSeq = 0;

/** Log ids sort in recording order, even when the (injected) clock stands still or steps back. */
export function nextLogId(now: number): string {
  if (now > lastLogMs) {
    lastLogMs = now;
    logSeq = 0;
  } else logSeq++;
  return `log_${lastLogMs.toString(36).padStart(9, '0')}${logSeq.toString(36).padStart(4, '0')}${randomBase62(4)}`;
}

/** The webhook id of one notification: stable, so queuing it twice cannot send it twice. */
export function webhookId(taskId: string, scheduledFor: string, round: number | 'late'): string {
  return `msg_${createHash('sha256').update(`${taskId}|${scheduledFor}|${round}`).digest('base64url').slice(0, 24)}`;
}

/** The id of an occurrence's late notice: one per (task, occurrence), whoever queues it. */
export function lateWebhookId(taskId: string, scheduledFor: string): string {
  return webhookId(taskId, scheduledFor, 'late');
}

/** Paused at `now`: paused, and not yet at its paused_until (a timed pause ends by itself). */
export function pausedAt(task: Pick<TaskRecord, 'paused' | 'paused_until'>, now: number): boolean {
  return task.paused === true && (task.paused_until == null || now < Date.parse(task.paused_until));
}

/** The claim that holds the task at `now`, if any. */
export function claimAt(task: Pick<TaskRecord, 'claim'>, now: number): NonNullable<TaskRecord['claim']> | null {
  return task.claim != null && task.claim.lease_until > now ? task.claim : null;
}

/** The fields lateness is read from. */
type LateFields = Pick<TaskRecord, 'next_run_at' | 'grace_seconds' | 'late_from'>;

/**
 * When the current due stretch turns late if nobody claims or reports it: grace_seconds after it
 * began (the occurrence's fire time, or when a retry of it fell due). Null without grace_seconds.
 */
export function lateAt(task: LateFields): number | null {
  if (task.grace_seconds == null) return null;
  return (task.late_from ?? Date.parse(task.next_run_at)) + task.grace_seconds * 1000;
}

type StatusFields = Pick<TaskRecord, 'next_run_at' | 'retry_count' | 'paused' | 'paused_until' | 'completed' | 'claim'> & Partial<LateFields>;

export function statusAt(task: StatusFields, now: number): TaskStatus {
  if (task.completed === true) return 'completed';
  if (pausedAt(task, now)) return 'paused';
  if (claimAt(task, now)) return 'claimed';
  if (now < Date.parse(task.next_run_at)) return 'scheduled';
  // Still due (due=true lists it): late only says nobody has taken it within its grace.
  const late = lateAt(task);
  if (late !== null && now >= late) return 'late';
  return task.retry_count > 0 ? 'retrying' : 'due';
}

/**
 * When the late notice (log entry, webhook) of the current occurrence is owed, if it is: the
 * task has grace_seconds, can be late (not idle, not held by a claim — a lapsed claim wakes the
 * scheduler at its own time), and its occurrence was not announced late yet.
 */
export function lateOwedAt(task: Pick<TaskRecord, 'completed' | 'paused' | 'paused_until' | 'claim' | 'late_noticed'> & LateFields): number | null {
  if (task.completed === true || (task.paused === true && task.paused_until == null) || task.claim != null) return null;
  if (task.late_noticed === task.next_run_at) return null;
  return lateAt(task);
}

export function wakeAt(task: Pick<TaskRecord, 'notify_at' | 'webhooks' | 'claim' | 'completed' | 'paused' | 'paused_until' | 'late_noticed'> & LateFields): number | null {
  let w = task.notify_at;
  const late = lateOwedAt(task);
  if (late !== null && (w === null || late < w)) w = late;
  // A claim's lease end: the scheduler applies the expiry (a failed attempt, logged lease_expired).
  if (task.claim != null && (w === null || task.claim.lease_until < w)) w = task.claim.lease_until;
  for (const d of task.webhooks) {
    // A leased attempt is someone's until the lease ends: look again then (a takeover).
    const at = d.lease_until !== undefined && d.lease_until > d.next_attempt_at ? d.lease_until : d.next_attempt_at;
    if (w === null || at < w) w = at;
  }
  return w;
}

export function toPublic(t: TaskRecord, now: number): PublicTask {
  return {
    task_id: t.task_id,
    agent_id: t.agent_id,
    name: t.name,
    schedule: t.schedule,
    ...(t.schedule === null && t.run_at != null ? { run_at: t.run_at } : {}),
    timezone: t.timezone,
    description: t.description,
    tags: t.tags,
    callback_url: t.callback_url,
    max_retries: t.max_retries,
    ...(t.grace_seconds != null ? { grace_seconds: t.grace_seconds } : {}),
    status: statusAt(t, now),
    ...(claimAt(t, now) ? { lease_expires_at: new Date(t.claim!.lease_until).toISOString() } : {}),
    ...(t.paused === true && t.paused_until != null && now < Date.parse(t.paused_until) ? { paused_until: t.paused_until } : {}),
    retry_count: t.retry_count,
    run_count: t.run_count,
    last_run_at: t.last_run_at,
    last_status: t.last_status,
    next_run_at: t.next_run_at,
    created_at: t.created_at,
    updated_at: t.updated_at,
  };
}

export function toPublicLog(l: LogRecord): PublicLog {
  return {
    log_id: l.log_id,
    task_id: l.task_id,
    agent_id: l.agent_id,
    status: l.status,
    message: l.message,
    attempt: l.attempt,
    created_at: l.created_at,
    ...(l.started_at !== undefined ? { started_at: l.started_at, duration_ms: l.duration_ms ?? 0 } : {}),
  };
}

export function notFound(taskId: string, agentId: string): ToolError {
  return new ToolError('NOT_FOUND', `No task "${taskId}" for agent "${agentId}"`, { task_id: taskId, agent_id: agentId });
}

/** The task if it exists and belongs to (caller, agent); otherwise a 404 that confirms nothing. */
export async function ownedTask(store: Store, caller: Pick<Caller, 'keyId' | 'ip'>, agentId: string, taskId: string): Promise<TaskRecord> {
  const t = await tasksOf(store).get(taskId);
  if (!t || t.owner_agent !== ownerAgent(caller, agentId)) throw notFound(taskId, agentId);
  return t;
}

/** Records a log entry and drops the task's oldest entries beyond LIMITS.logsPerTask. */
export async function appendLog(
  store: Store,
  task: Pick<TaskRecord, 'task_id' | 'agent_id' | 'owner_agent'>,
  entry: { status: LogStatus; message: string | null; attempt: number; at: number; started_at?: string },
): Promise<LogRecord> {
  const logs = logsOf(store);
  const rec: LogRecord = {
    log_id: nextLogId(entry.at),
    task_id: task.task_id,
    agent_id: task.agent_id,
    owner_agent: task.owner_agent,
    status: entry.status,
    message: entry.message,
    attempt: entry.attempt,
    created_at: new Date(entry.at).toISOString(),
    ...(entry.started_at !== undefined ? { started_at: entry.started_at, duration_ms: Math.max(0, entry.at - Date.parse(entry.started_at)) } : {}),
  };
  await logs.put(rec);
  const n = await logs.count({ index: 'task_id', eq: task.task_id });
  if (n > LIMITS.logsPerTask) {
    const old = await logs.query({ index: 'task_id', eq: task.task_id, order: 'asc', limit: n - LIMITS.logsPerTask });
    // Lazy: an entry that reappears after a crash is harmless; the next append drops it again.
    await Promise.all(old.map((l) => logs.delete(l.log_id, { durability: 'lazy' })));
  }
  return rec;
}

/** The event the tools emit when a task change may need the scheduler now. */
export const WAKE_EVENT = 'cron-tasks:wake';

/** Pokes the running scheduler of this service, if any (serve mode runs one). */
export function wakeScheduler(services: Pick<Services, 'events'>): void {
  services.events.emit(WAKE_EVENT);
}
