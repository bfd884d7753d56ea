import { z } from 'zod';
import { createApiKey, Email } from '../../auth/keys.js';
import { singleWindowHeaders } from '../../auth/limiter.js';
import { DEFAULT_PLANS, publicLimits } from '../../auth/plans.js';
import { defineRoute, type OpenApiHelpers, type RouteContext } from '../../core/route.js';
import { ToolError } from '../../errors.js';

/**
 * Limited to 5 per client address per hour, every attempt counted (so the 409 of a taken
 * address cannot be used to probe addresses fast): taken before the body is read.
 */
async function admitRegistration(ctx: RouteContext): Promise<void> {
  const who = await ctx.caller();
  const auth = ctx.services.auth;
  if (!auth.enabled) return;
  const w = await auth.register.take(who.ip);
  const headers = singleWindowHeaders(w, 'register');
  for (const [k, v] of Object.entries(headers)) ctx.setHeader(k, v);
  if (!w.allowed) {
    throw new ToolError(
      'RATE_LIMITED',
      `Too many registrations from this address: ${w.limit} per hour; retry after ${headers['Retry-After']} s`,
      { window: 'hour', limit: w.limit, remaining: 0, retry_after: Number(headers['Retry-After']), retry_at: new Date(w.resetAt).toISOString() },
    );
  }
}

/**
 * `POST /api/auth/register {email}` → 201 with a new free key, shown only in this answer.
 * Not a tool (an agent has no business minting keys).
 */
export const registerRoute = defineRoute({
  method: 'POST',
  path: '/api/auth/register',
  input: { body: z.object({ email: Email }, { error: 'must be a JSON object like {"email": "you@example.com"}' }) },
  // The key is in the body: no cache may keep it (nor any answer of this route).
  headers: { 'Cache-Control': 'no-store' },
  before: admitRegistration,
  handler: async ({ body }, { services }) => {
    const { api_key, record } = await createApiKey(services.store, body.email, services.clock.now());
    services.log.info(`api key registered: ${record.key_id} (${record.plan})`);
    return {
      status: 201,
      body: {
        api_key,
        key_prefix: record.key_prefix,
        plan: record.plan,
        email: record.email,
        created_at: record.created_at,
        limits: publicLimits(services.config.plans, record.plan),
      },
    };
  },
  openapi: registerOpenApi,
});

/** The OpenAPI operation of registration. */
function registerOpenApi(h: OpenApiHelpers): Record<string, Record<string, unknown>> {
  const limits = publicLimits(DEFAULT_PLANS, 'free');
  return {
    post: {
      operationId: 'auth_register',
      summary: 'Register for an API key',
      description: 'Creates a free-plan key for an e-mail address. The key is shown only in this answer (the server keeps a hash). Limited to 5 per address per hour.',
      tags: [h.tag],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { type: 'object', required: ['email'], properties: { email: { type: 'string', format: 'email', description: 'Your e-mail address' } } },
            example: { email: 'dev@example.com' },
          },
        },
      },
      responses: {
        201: {
          description: 'Created',
          content: {
            'application/json': {
              schema: {
                type: 'object',
                properties: {
                  success: { const: true },
                  api_key: { type: 'string' },
                  key_prefix: { type: 'string' },
                  plan: { const: 'free' },
                  email: { type: 'string' },
                  created_at: { type: 'string', format: 'date-time' },
                  limits: { type: 'object' },
                },
              },
              example: {
                success: true,
                api_key: 'dtb_0123456789abcdefABCDEF0123456789',
                key_prefix: 'dtb_0123',
                plan: 'free',
                email: 'dev@example.com',
                created_at: '2026-11-22T09:00:00.000Z',
                limits,
              },
            },
          },
        },
        ...h.errorResponses(['INVALID_INPUT', 'UNAUTHORIZED', 'FORBIDDEN', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'STORAGE_UNAVAILABLE', 'INTERNAL']),
      },
    },
  };
}
