/**
 * The family's collections, in a module of their own: `serve` imports them (through the
 * family's manifest.ts) to start loading the data before the rest, and model.ts pulls in
 * cron-parser and luxon (≈ 0.08 s).
 */
import { defineCollection } from '../../state/index.js';
import type { LogRecord, TaskRecord } from './records.js';

// ~700 bytes a task: 500 per file keeps a done/create rewrite near 350 KB.
export const TASKS = defineCollection<TaskRecord>({ name: 'cron_tasks', key: 'task_id', indexes: ['agent_next', 'wake_at'], segmentSize: 500 });
// ~250 bytes an entry.
export const LOGS = defineCollection<LogRecord>({ name: 'cron_logs', key: 'log_id', indexes: ['task_id', 'owner_agent'], segmentSize: 2000 });
