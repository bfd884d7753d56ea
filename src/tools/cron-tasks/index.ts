import type { AnyTool } from '../../registry.js';
import { cronTaskAgentLogs } from './cron-task-agent-logs.js';
import { cronTaskCreate } from './cron-task-create.js';
import { cronTaskDelete } from './cron-task-delete.js';
import { cronTaskDone } from './cron-task-done.js';
import { cronTaskList } from './cron-task-list.js';
import { cronTaskLogs } from './cron-task-logs.js';
import { cronTaskTemplates } from './cron-task-templates.js';

export const cronTasksTools: AnyTool[] = [
  cronTaskCreate,
  cronTaskList,
  cronTaskDone,
  cronTaskLogs,
  cronTaskAgentLogs,
  cronTaskTemplates,
  cronTaskDelete,
] as unknown as AnyTool[];
