import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { nextFire } from '../../lib/cron.js';
import { agentNext, appendLog, LIMITS, notFound, ownerAgent, tasksOf, toPublic, toPublicLog, wakeAt, wakeScheduler, type TaskRecord } from './model.js';
import { agentIdInput, CONTROL_EXCEPT_WS, logOutput, taskIdInput, taskOutput } from './schemas.js';

export interface Retry {
  /** true when the failure will be retried: the task stays due (status retrying). */
  scheduled: boolean;
  /** The retry number now pending (1 = first retry), 0 when none is. */
  attempt: number;
  max_retries: number;
}

/**
 * The state machine of one report (docs/contract.md §3). Pure: the next record, the run attempt that
 * was reported (1 = first try) and what happens next.
 */
export function applyReport(cur: TaskRecord, status: 'done' | 'failed', now: number): { next: TaskRecord; attempt: number; retry: Retry } {
  const attempt = cur.retry_count + 1;
  const at = new Date(now).toISOString();
  const hooks = cur.callback_url !== null;
  const base = { ...cur, last_run_at: at, updated_at: at };
  let next: TaskRecord;
  let retry: Retry;
  if (status === 'failed' && cur.retry_count < cur.max_retries) {
    // Stays due: next_run_at is not moved forward (pulled back to now for an early report).
    const nextRun = Math.min(Date.parse(cur.next_run_at), now);
    next = { ...base, retry_count: cur.retry_count + 1, next_run_at: new Date(nextRun).toISOString(), notify_at: hooks ? now : null, notify_round: cur.retry_count + 1 };
    retry = { scheduled: true, attempt: cur.retry_count + 1, max_retries: cur.max_retries };
  } else {
    const fire = nextFire(cur.schedule, cur.timezone, now);
    next = {
      ...base,
      retry_count: 0,
      run_count: status === 'done' ? cur.run_count + 1 : cur.run_count,
      last_status: status,
      next_run_at: new Date(fire).toISOString(),
      notify_at: hooks ? fire : null,
      notify_round: 0,
    };
    retry = { scheduled: false, attempt: 0, max_retries: cur.max_retries };
  }
  next.agent_next = agentNext(cur.owner_agent, next.next_run_at);
  next.wake_at = wakeAt(next);
  return { next, attempt, retry };
}

export const cronTaskDone = defineTool({
  name: 'cron_task_done',
  title: 'Report a cron task run',
  description:
    'Report the outcome of a due task. Without status (or status "done"): the run counts, and the task waits for its next fire time. ' +
    'With status "failed" (and a message): while retries are left (max_retries) the task stays due with status "retrying" and retry.scheduled true; ' +
    'otherwise the occurrence is recorded as failed and the task moves to its next fire time. Every report is logged.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
    status: z.enum(['done', 'failed']).default('done').describe('done (default) or failed'),
    message: z
      .string()
      .max(LIMITS.message)
      .refine((s) => !CONTROL_EXCEPT_WS.test(s), 'must not contain control characters other than newline and tab')
      .optional()
      .describe(`What happened, kept in the log (at most ${LIMITS.message} characters)`),
  }),
  output: z.object({
    task: taskOutput.describe('The task after the report'),
    log: logOutput.describe('The log entry recorded'),
    retry: z
      .object({
        scheduled: z.boolean().describe('true: the failure will be retried; the task is due again now (status retrying)'),
        attempt: z.number().int().describe('The retry now pending (1 = first retry), 0 when none'),
        max_retries: z.number().int().describe("The task's max_retries"),
      })
      .describe('What happens next'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/done' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', status: 'failed', message: 'upstream API returned 503' },
  handler: async ({ task_id, agent_id, status, message }, { services, caller }) => {
    const now = services.clock.now();
    const oa = ownerAgent(caller, agent_id);
    let outcome: ReturnType<typeof applyReport> | undefined;
    const updated = await tasksOf(services.store).update(task_id, (cur) => {
      outcome = undefined;
      if (!cur || cur.owner_agent !== oa) return undefined;
      outcome = applyReport(cur, status, now);
      return outcome.next;
    });
    if (!updated || !outcome) throw notFound(task_id, agent_id);
    if (updated.wake_at !== null) wakeScheduler(services);
    const log = await appendLog(services.store, updated, { status, message: message ?? null, attempt: outcome.attempt, at: now });
    return { task: toPublic(updated, now), log: toPublicLog(log), retry: outcome.retry };
  },
});
