/** Zod pieces shared by the seven cron task tools. */
import { z } from 'zod';
import { AGENT_ID_PATTERN, DEFAULT_AGENT, LIMITS, TASK_ID_PATTERN } from './model.js';

// C0/C1 control characters; newlines and tabs are allowed in descriptions and messages only.
export const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
export const CONTROL_EXCEPT_WS = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

export const agentIdInput = z
  .string()
  .min(1)
  .max(LIMITS.agentId)
  .regex(AGENT_ID_PATTERN, 'must be letters, digits and . _ : @ -')
  .default(DEFAULT_AGENT)
  .describe(`The agent the task belongs to (1-${LIMITS.agentId} characters of A-Z a-z 0-9 . _ : @ -; default "${DEFAULT_AGENT}")`);

export const taskIdInput = z
  .string()
  .min(1)
  .max(LIMITS.taskId)
  .regex(TASK_ID_PATTERN, 'must be letters, digits, _ and -')
  .describe('The task id returned by cron_task_create');

export const runIdInput = z.string().min(1).max(64).regex(TASK_ID_PATTERN, 'must be letters, digits, _ and -').describe('A run_id from cron_task_claim');

export const limitInput = z.number().int().min(1).max(500).default(50).describe('How many entries to return, newest first: 1-500 (default 50)');

// Output fields whose name says it all carry no description: tools/list is paid for in context (issue 34).
export const taskOutput = z.object({
  task_id: z.string(),
  agent_id: z.string(),
  name: z.string(),
  schedule: z.string().nullable().describe('Cron expression (5 fields or a macro); null for a one-shot task'),
  run_at: z.string().optional().describe('One-shot tasks only: the one run time'),
  timezone: z.string().describe('IANA time zone the schedule runs in'),
  description: z.string().describe('Description (may be empty)'),
  tags: z.array(z.string()),
  callback_url: z.string().nullable().describe('Webhook called when the task falls due, or null'),
  max_retries: z.number().int().describe('Retries allowed after a reported failure (0-10)'),
  grace_seconds: z.number().int().optional(),
  status: z
    .enum(['scheduled', 'due', 'retrying', 'late', 'claimed', 'paused', 'completed'])
    .describe(
      'scheduled (next_run_at in the future), due, retrying (due again after a reported failure), late (due past grace_seconds, unclaimed), claimed (a worker holds the due run: cron_task_claim), paused (never due until resumed), or completed (a one-shot task that ran)',
    ),
  lease_expires_at: z.string().optional().describe('Claimed tasks only: when the claim lapses and the task is due again'),
  paused_until: z.string().optional().describe('Paused tasks only, when they resume by themselves: the time they do'),
  retry_count: z.number().int().describe('Failures reported for the current occurrence that were retried'),
  run_count: z.number().int().describe('Occurrences reported done'),
  last_run_at: z.string().nullable().describe('Time of the last done/failed report, or null'),
  last_status: z.enum(['done', 'failed']).nullable().describe('Outcome of the last finished occurrence, or null'),
  next_run_at: z.string().describe('The occurrence the task waits for (in the past while due)'),
  created_at: z.string(),
  updated_at: z.string().describe('Time of the last change'),
});

const RUN_AT_END = Date.parse('9999-01-01T00:00:00.000Z');

/** The fields create and update share, with create's defaults left to create. */
export const fields = {
  name: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.name)
    .refine((s) => !CONTROL.test(s), 'must not contain control characters')
    .describe(`Task name, 1-${LIMITS.name} characters`),
  schedule: z
    .string()
    .max(LIMITS.schedule)
    .describe('Cron expression: 5 fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly'),
  run_at: z.iso
    .datetime({ offset: true })
    // Stored as UTC ISO: an offset must not carry it past year 9999 (a "+010000-…" string).
    .refine((s) => Date.parse(s) >= 0 && Date.parse(s) < RUN_AT_END, 'must be between 1970 and 9998')
    .describe('One-shot task: the one time it runs (ISO 8601 date-time with Z or an offset), instead of a schedule'),
  description: z
    .string()
    .max(LIMITS.description)
    .refine((s) => !CONTROL_EXCEPT_WS.test(s), 'must not contain control characters other than newline and tab')
    .describe(`What the task is for, at most ${LIMITS.description} characters`),
  tags: z
    .array(
      z
        .string()
        .trim()
        .min(1)
        .max(LIMITS.tag)
        .refine((s) => !CONTROL.test(s), 'must not contain control characters'),
    )
    .max(LIMITS.tags)
    .describe(`Labels, at most ${LIMITS.tags} of 1-${LIMITS.tag} characters each`),
  callback_url: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.callbackUrl)
    .describe('http(s) URL that receives a signed POST (Standard Webhooks) each time the task falls due; must be a public address'),
  max_retries: z
    .number()
    .int()
    .min(0)
    .max(LIMITS.maxRetries)
    .describe(`How many times a reported failure is retried before the occurrence counts as failed, 0-${LIMITS.maxRetries} (default 0)`),
  grace_seconds: z
    .number()
    .int()
    .min(1)
    .max(LIMITS.graceSeconds)
    .describe(`Seconds a due run may wait for a claim or report (1-${LIMITS.graceSeconds}); then it is late: logged, and a cron_task.late webhook. Default: never late`),
};

export const logOutput = z.object({
  log_id: z.string().describe('Log entry id (sorts in recording order)'),
  task_id: z.string(),
  agent_id: z.string(),
  status: z
    .enum(['done', 'failed', 'webhook_ok', 'webhook_failed', 'lease_expired', 'late'])
    .describe('What happened (lease_expired: a claim ended without a report; the task is due again. late: due past grace_seconds, unclaimed)'),
  message: z.string().nullable().describe("The agent's message, or what the webhook delivery saw"),
  attempt: z.number().int().describe('Run attempt (1 = first try, 2 = first retry …) or webhook delivery attempt (1-5)'),
  created_at: z.string().describe('When it was recorded'),
  started_at: z.string().optional().describe('A claimed run only: when it was claimed'),
  duration_ms: z.number().int().optional().describe('A claimed run only: from the claim to this entry, in ms'),
});
