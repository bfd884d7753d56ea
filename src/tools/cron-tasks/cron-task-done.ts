import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { appendLog, claimAt, LIMITS, toPublic, toPublicLog } from './model.js';
import { agentIdInput, CONTROL_EXCEPT_WS, logOutput, runIdInput, taskIdInput, taskOutput } from './schemas.js';
import { steerTask } from './steer.js';
import { checkRun, refused } from './steering.js';
import { applyReport } from './transitions.js';

export const cronTaskDone = defineTool({
  name: 'cron_task_done',
  title: 'Report a cron task run',
  description:
    'Report the outcome of a due task. Without status (or status "done"): the run counts, and the task waits for its next fire time. ' +
    'With status "failed" (and a message): while retries are left (max_retries) the task stays due with status "retrying" and retry.scheduled true; ' +
    'otherwise the occurrence is recorded as failed and the task moves to its next fire time. A one-shot task then reads status "completed" (a further report is a 409). Every report is logged.',
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
    run_id: runIdInput.optional().describe('The run_id of your cron_task_claim: the report is then accepted only while that claim holds (409 when stale or foreign)'),
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
  errors: ['CONFLICT'],
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/done' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', status: 'failed', message: 'upstream API returned 503' },
  handler: async ({ task_id, agent_id, status, message, run_id }, ctx) => {
    const now = ctx.services.clock.now();
    let outcome: ReturnType<typeof applyReport> | undefined;
    let startedAt: string | undefined;
    const updated = await steerTask(ctx, agent_id, task_id, (cur, at) => {
      outcome = undefined;
      if (cur.completed === true) return refused(cur, 'completed', 'report a run');
      const stale = run_id === undefined ? null : checkRun(cur, run_id, at);
      if (stale) return stale;
      startedAt = claimAt(cur, at)?.started_at;
      outcome = applyReport(cur, status, at);
      return outcome.next;
    });
    const log = await appendLog(ctx.services.store, updated, { status, message: message ?? null, attempt: outcome!.attempt, at: now, ...(startedAt !== undefined && { started_at: startedAt }) });
    return { task: toPublic(updated, now), log: toPublicLog(log), retry: outcome!.retry };
  },
});
