import { defineFamily } from '../../core/family.js';
import { cronTaskAgentLogs } from './cron-task-agent-logs.js';
import { cronTaskClaim } from './cron-task-claim.js';
import { cronTaskCreate } from './cron-task-create.js';
import { cronTaskDelete } from './cron-task-delete.js';
import { cronTaskDone } from './cron-task-done.js';
import { cronTaskList } from './cron-task-list.js';
import { cronTaskLogs } from './cron-task-logs.js';
import { cronTaskPause, cronTaskResume } from './cron-task-pause.js';
import { cronTaskRunNow } from './cron-task-run-now.js';
import { cronTaskTemplates } from './cron-task-templates.js';
import { cronTaskUpdate } from './cron-task-update.js';
import { startScheduler } from './scheduler.js';

/** Scheduled tasks an agent polls or receives as signed webhooks; the scheduler runs in serve mode. */
export const cronTasksFamily = defineFamily({
  instructions: 'a cron task manager: create scheduled or one-shot tasks, poll the due ones (or receive signed webhooks), report them done or failed, claim a due run (one worker of many), update, pause, resume or run them now, read their logs.',
  tag: { name: 'Cron tasks', description: 'Scheduled tasks an agent polls (or receives as signed webhooks) and reports done. Fields are snake_case.' },
  tools: [cronTaskCreate, cronTaskList, cronTaskDone, cronTaskLogs, cronTaskAgentLogs, cronTaskTemplates, cronTaskDelete, cronTaskUpdate, cronTaskPause, cronTaskResume, cronTaskRunNow, cronTaskClaim],
  errors: ['NOT_FOUND', 'STORAGE_UNAVAILABLE'],
  background: (services) => startScheduler(services),
});
