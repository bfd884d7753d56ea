/** Applies one transition to a caller's task, atomically (any instance, any store). */
import { ToolError } from '../../errors.js';
import type { ToolContext } from '../../registry.js';
import type { Store } from '../../state/index.js';
import { appendLog, notFound, ownerAgent, tasksOf, wakeScheduler } from './model.js';
import type { TaskRecord } from './records.js';
import type { Step } from './steering.js';
import { droppedMessage, expireClaim, lateMessage, queueLate, type Expiry, type LateNotice } from './transitions.js';

/** The log entry of a claim that lapsed (by whoever's update applied the expiry: exactly once). */
export async function logExpiry(store: Store, task: TaskRecord, e: Expiry): Promise<void> {
  const c = e.expired!;
  await appendLog(store, task, {
    status: 'lease_expired',
    message: `The lease of ${c.run_id} ended without a report; ${e.counted ? 'counted as a failed attempt' : 'no retry left to count: due again until a report'}`,
    attempt: e.attempt,
    at: c.lease_until,
    started_at: c.started_at,
  });
}

/**
 * The log entries of a late notice (by whoever's update applied it: exactly once per
 * occurrence), stamped at the moment the task turned late, and of the deliveries it dropped.
 */
export async function logLate(store: Store, task: TaskRecord, n: LateNotice, now: number): Promise<void> {
  // From the notice, not `task`: a step applied after it (a failed report, an update) may have changed the record.
  await appendLog(store, task, { status: 'late', message: lateMessage(n), attempt: n.attempt, at: n.since });
  for (const d of n.dropped) await appendLog(store, task, { status: 'webhook_failed', message: droppedMessage(d), attempt: d.attempt, at: now });
}

/**
 * The task `taskId` of (caller, agent) after `step` ran on it inside one `tasks.update`: 404 when
 * it is not the caller's, the step's ToolError when it refuses, the record unchanged when the
 * step has nothing to change. Wakes the scheduler when a webhook may be owed.
 */
export async function steerTask(ctx: Pick<ToolContext, 'services' | 'caller'>, agentId: string, taskId: string, step: (cur: TaskRecord, now: number) => Step): Promise<TaskRecord> {
  const { services } = ctx;
  const now = services.clock.now();
  const oa = ownerAgent(ctx.caller, agentId);
  let refusal: ToolError | undefined;
  let found = false;
  let expiry: Expiry | undefined;
  let late: LateNotice | undefined;
  const rec = await tasksOf(services.store).update(taskId, (cur) => {
    refusal = undefined;
    expiry = undefined;
    late = undefined;
    found = cur !== undefined && cur.owner_agent === oa;
    if (!found) return undefined;
    // What happened before this call is applied first, whatever the step does next: a lapsed
    // claim (a failed attempt), then lateness not yet noticed (so a claim just after the grace
    // still records that the run was late).
    const e = (expiry = expireClaim(cur!, now));
    late = queueLate(e.next, now);
    const before = late?.next ?? e.next;
    const changed = e.expired !== null || late !== undefined;
    const r = step(before, now);
    if (r instanceof ToolError) {
      refusal = r;
      return changed ? before : undefined;
    }
    return r ?? (changed ? before : undefined);
  });
  if (!found || !rec) throw notFound(taskId, agentId);
  if (expiry?.expired) await logExpiry(services.store, rec, expiry);
  if (late) await logLate(services.store, rec, late, now);
  if (refusal) throw refusal;
  if (rec.wake_at !== null) wakeScheduler(services);
  return rec;
}
