import type { Hono } from 'hono';
import { createApiKey, normaliseEmail } from '../../auth/keys.js';
import { singleWindowHeaders } from '../../auth/limiter.js';
import { DEFAULT_PLANS, publicLimits } from '../../auth/plans.js';
import type { RouteKit } from '../../core/family.js';
import { ToolError, type ErrorCode } from '../../errors.js';
import { isPlainObject } from '../../invoke.js';
import type { Services } from '../../services.js';

/**
 * `POST /api/auth/register {email}` → 201 with a new free key, shown only in this answer.
 * Not a tool (an agent has no business minting keys). Limited to 5 per client address per hour,
 * every attempt counted (so the 409 of a taken address cannot be used to probe addresses fast).
 */
export function authRoutes(app: Hono, helpers: RouteKit, services: Services): void {
  const auth = services.auth;
  app.post('/api/auth/register', async (c) => {
    let headers: Record<string, string> = {};
    let res: Response;
    try {
      const who = await helpers.caller(c);
      if (auth.enabled) {
        const w = await auth.register.take(who.ip);
        headers = singleWindowHeaders(w, 'register');
        if (!w.allowed) {
          throw new ToolError(
            'RATE_LIMITED',
            `Too many registrations from this address: ${w.limit} per hour; retry after ${headers['Retry-After']} s`,
            { window: 'hour', limit: w.limit, remaining: 0, retry_after: Number(headers['Retry-After']), retry_at: new Date(w.resetAt).toISOString() },
          );
        }
      }
      const body = await helpers.readJson(c);
      if (!isPlainObject(body)) throw new ToolError('INVALID_INPUT', 'The request body must be a JSON object like {"email": "you@example.com"}');
      const email = normaliseEmail(body.email);
      const { api_key, record } = await createApiKey(services.store, email, services.clock.now());
      services.log.info(`api key registered: ${record.key_id} (${record.plan})`);
      res = c.json(
        {
          success: true,
          api_key,
          key_prefix: record.key_prefix,
          plan: record.plan,
          email: record.email,
          created_at: record.created_at,
          limits: publicLimits(services.config.plans, record.plan),
        },
        201,
      );
    } catch (err) {
      res = helpers.errorResponse(c, err);
    }
    for (const [k, v] of Object.entries(headers)) res.headers.set(k, v);
    // The key is in the body: no cache may keep it.
    res.headers.set('Cache-Control', 'no-store');
    return res;
  });
}

/** The OpenAPI operation of registration. */
export function authOpenApi(h: { errorResponses(codes: ErrorCode[]): Record<string, unknown> }, tag: string): Record<string, Record<string, unknown>> {
  const limits = publicLimits(DEFAULT_PLANS, 'free');
  return {
    '/api/auth/register': {
      post: {
        operationId: 'auth_register',
        summary: 'Register for an API key',
        description: 'Creates a free-plan key for an e-mail address. The key is shown only in this answer (the server keeps a hash). Limited to 5 per address per hour.',
        tags: [tag],
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
    },
  };
}
