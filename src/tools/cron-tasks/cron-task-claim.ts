import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { ids, toPublic } from './model.js';
import { agentIdInput, taskIdInput, taskOutput } from './schemas.js';
import { steerTask } from './steer.js';
import { applyClaim } from './steering.js';

/** Lease bounds of a claim, in seconds. */
export const LEASE = { min: 10, max: 3600, default: 300 } as const;

export const cronTaskClaim = defineTool({
  name: 'cron_task_claim',
  title: 'Claim a due cron task',
  description:
    'Take the due run of a task before working on it, so that other workers polling due=true leave it alone: exactly one of any number of simultaneous claims wins ' +
    `and gets {run_id, lease_expires_at}; the others get a 409 naming the holder's expiry. Report with cron_task_done and the run_id before the lease ends (lease_seconds ${LEASE.min}-${LEASE.max}, default ${LEASE.default}); ` +
    'a lease that ends without a report makes the task due again (logged lease_expired), counted as a failed attempt while retries are left. Only a due task can be claimed.',
  input: z.object({
    task_id: taskIdInput,
    agent_id: agentIdInput,
    lease_seconds: z.number().int().min(LEASE.min).max(LEASE.max).default(LEASE.default).describe(`How long the claim holds, ${LEASE.min}-${LEASE.max} seconds (default ${LEASE.default})`),
  }),
  output: z.object({
    run_id: z.string().describe('Proof of the claim: pass it to cron_task_done'),
    lease_expires_at: z.string().describe('When the claim lapses without a report'),
    task: taskOutput.describe('The claimed task (status claimed)'),
  }),
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
  errors: ['CONFLICT'],
  rest: { method: 'POST', path: '/api/cron-task/{task_id}/claim' },
  example: { task_id: 'task_AbCdEfGhIjKlMnOp', agent_id: 'my-agent', lease_seconds: 600 },
  handler: async ({ task_id, agent_id, lease_seconds }, ctx) => {
    const now = ctx.services.clock.now();
    const runId = ids.run();
    const rec = await steerTask(ctx, agent_id, task_id, (t, at) => applyClaim(t, runId, lease_seconds * 1000, at));
    return { run_id: runId, lease_expires_at: new Date(rec.claim!.lease_until).toISOString(), task: toPublic(rec, now) };
  },
});
