import type { Hono } from 'hono';
import { ToolError } from '../errors.js';
import type { ProjectionHelpers } from '../http-projection.js';
import { isPlainObject } from '../invoke.js';
import type { Services } from '../services.js';
import { authFor } from './auth.js';
import { createApiKey, normaliseEmail } from './keys.js';
import { singleWindowHeaders } from './limiter.js';
import { publicLimits } from './plans.js';

/**
 * `POST /api/auth/register {email}` → 201 with a new free key, shown only in this answer.
 * Not a tool (an agent has no business minting keys). Limited to 5 per client address per hour,
 * every attempt counted (so the 409 of a taken address cannot be used to probe addresses fast).
 */
export function authRoutes(services: Services) {
  const auth = authFor(services);
  return (app: Hono, helpers: ProjectionHelpers): void => {
    app.post('/api/auth/register', async (c) => {
      let headers: Record<string, string> = {};
      let res: Response;
      try {
        const who = await helpers.caller(c);
        if (auth.enabled) {
          const w = auth.register.take(who.ip);
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
            limits: publicLimits(record.plan),
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
  };
}
