/** Applies one transition to a caller's task, atomically (any instance, any store). */
import { ToolError } from '../../errors.js';
import type { ToolContext } from '../../registry.js';
import { notFound, ownerAgent, tasksOf, wakeScheduler } from './model.js';
import type { TaskRecord } from './records.js';
import type { Step } from './steering.js';

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
  const rec = await tasksOf(services.store).update(taskId, (cur) => {
    refusal = undefined;
    found = cur !== undefined && cur.owner_agent === oa;
    if (!found) return undefined;
    const r = step(cur!, now);
    if (r instanceof ToolError) {
      refusal = r;
      return undefined;
    }
    return r;
  });
  if (!found || !rec) throw notFound(taskId, agentId);
  if (refusal) throw refusal;
  if (rec.wake_at !== null) wakeScheduler(services);
  return rec;
}
