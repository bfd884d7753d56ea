import { z } from 'zod';
import { keyRequired } from '../../auth/auth.js';
import { publicLimits } from '../../auth/plans.js';
import { ToolError } from '../../errors.js';
import { defineTool } from '../../registry.js';

const Window = z.object({
  used: z.number().int().describe('Calls counted in this window'),
  remaining: z.number().int().describe('Calls left in this window'),
  resets_at: z.string().describe('When one more call becomes available (minute: the oldest counted call leaves the sliding 60 s window; day: next 00:00 UTC), ISO 8601'),
});

export const authInfo = defineTool({
  name: 'auth_info',
  title: 'API key info',
  description:
    'Show the plan, limits and current usage (this minute and this UTC day) of the API key this call was made with. ' +
    'Needs a key: over MCP, connect with the header Authorization: Bearer <key>; over REST, send it the same way or as ?api_key=. ' +
    'Asking costs nothing: this call is not counted against the limits.',
  input: z.object({}),
  output: z.object({
    plan: z.enum(['free', 'pro']).describe('The key\'s plan'),
    email: z.string().describe('The e-mail address the key was registered with'),
    key_prefix: z.string().describe('The first characters of the key, for telling keys apart'),
    created_at: z.string().describe('When the key was registered, ISO 8601'),
    limits: z.object({
      per_minute: z.number().int().describe('Tool calls allowed in any 60 seconds'),
      per_day: z.number().int().describe('Tool calls allowed per UTC day'),
    }),
    usage: z.object({ minute: Window, day: Window }),
  }),
  annotations: { readOnlyHint: true, idempotentHint: false, openWorldHint: false },
  metering: 'free',
  rest: { method: 'GET', path: '/api/auth/info' },
  example: {},
  handler: async (_input, ctx) => {
    const auth = ctx.services.auth;
    if (ctx.caller.keyId === null) {
      throw keyRequired('An API key is required: send Authorization: Bearer <key> (register one with POST /api/auth/register)');
    }
    const rec = await auth.record(ctx.caller);
    if (!rec) throw new ToolError('UNAUTHORIZED', 'Unknown API key');
    const u = await auth.usage(ctx.caller);
    const iso = (ms: number) => new Date(ms).toISOString();
    return {
      plan: rec.plan,
      email: rec.email,
      key_prefix: rec.key_prefix,
      created_at: rec.created_at,
      limits: publicLimits(ctx.services.config.plans, rec.plan),
      usage: {
        minute: { used: u.minute.used, remaining: u.minute.remaining, resets_at: iso(u.minute.resetAt) },
        day: { used: u.day.used, remaining: u.day.remaining, resets_at: iso(u.day.resetAt) },
      },
    };
  },
});
