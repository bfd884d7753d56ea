import cronstrue from 'cronstrue';
import { z } from 'zod';
import { defineTool } from '../../registry.js';
import { CRON_MAX_LENGTH, nextRuns, parseCron, type ParsedCron } from '../../lib/cron.js';
import { zoneSchema } from '../../lib/zone-time.js';

export { CRON_MAX_LENGTH, MACROS, nextRuns, parseCron, type ParsedCron } from '../../lib/cron.js';

/** English description; cronstrue reads the fields as written (names included). */
function describe(parsed: ParsedCron): string {
  for (const expr of [Object.values(parsed.fields).join(' '), parsed.numeric]) {
    try {
      return cronstrue.toString(expr, { use24HourTimeFormat: true, throwExceptionOnParseError: true, verbose: false });
    } catch {
      // try the numeric form next
    }
  }
  return `Runs at the times matching ${parsed.numeric}`;
}

export const cronParse = defineTool({
  name: 'cron_parse',
  title: 'Cron expression parser',
  description:
    'Explain a standard 5-field cron expression (minute hour day-of-month month day-of-week; names JAN-DEC and SUN-SAT allowed) or a macro (@hourly @daily @weekly @monthly @yearly) in English and list its next run times in a time zone. When both day-of-month and day-of-week are restricted, a day matching either runs (classic cron OR rule).',
  input: z.object({
    expression: z.string().max(CRON_MAX_LENGTH).describe('Cron expression: 5 fields, or @hourly, @daily, @weekly, @monthly, @yearly'),
    timezone: zoneSchema('timezone').default('UTC').describe('IANA time zone the schedule runs in (default UTC)'),
    count: z.number().int().min(1).max(50).default(5).describe('How many next run times to list, 1-50 (default 5)'),
  }),
  output: z.object({
    expression: z.string().describe('The expression, trimmed'),
    description: z.string().describe('The schedule in English'),
    fields: z
      .object({
        minute: z.string(),
        hour: z.string(),
        dayOfMonth: z.string(),
        month: z.string(),
        dayOfWeek: z.string(),
      })
      .describe('The five fields as written (macros expanded)'),
    timezone: z.string().describe('The time zone used'),
    nextRuns: z.array(z.string()).describe('Next run times, strictly after now, as ISO 8601 UTC instants'),
  }),
  annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
  rest: { method: 'POST', path: '/api/cron-parse' },
  example: { expression: '*/15 9-17 * * MON-FRI', timezone: 'Europe/Paris', count: 5 },
  handler: ({ expression, timezone, count }, ctx) => {
    const parsed = parseCron(expression);
    const runs = nextRuns(parsed, timezone, ctx.services.clock.now(), count);
    return {
      expression: expression.trim().split(/\s+/).join(' '),
      description: describe(parsed),
      fields: parsed.fields,
      timezone,
      nextRuns: runs.map((t) => new Date(t).toISOString()),
    };
  },
});
