import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { TEMPLATES } from './templates.js';

export const cronTaskTemplates = defineTool({
  name: 'cron_task_templates',
  title: 'Cron task templates',
  description:
    'Ready-made schedules (daily-morning, hourly, every-30min, weekday-morning, weekly, monthly, …). Each has the fields cron_task_create takes (name, schedule, description, tags): pass one straight to it, optionally with your own agent_id, timezone and callback_url.',
  input: z.object({}),
  output: z.object({
    templates: z
      .array(
        z.object({
          template_id: z.string().describe('Stable id, e.g. daily-morning'),
          name: z.string().describe('Task name'),
          schedule: z.string().describe('Cron expression'),
          description: z.string().describe('The schedule in words'),
          tags: z.array(z.string()).describe('Labels'),
        }),
      )
      .describe('The templates'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'GET', path: '/api/cron-task/templates' },
  example: {},
  handler: () => ({ templates: TEMPLATES.map((t) => ({ ...t, tags: [...t.tags] })) }),
});
