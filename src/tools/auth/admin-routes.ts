import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Hono } from 'hono';
import { listApiKeys, normaliseEmail, setPlan } from '../../auth/keys.js';
import { isPlanName, PLAN_NAMES } from '../../auth/plans.js';
import type { RouteKit } from '../../core/family.js';
import { ToolError } from '../../errors.js';
import { isPlainObject } from '../../invoke.js';
import type { Services } from '../../services.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The operator's routes, only when ADMIN_TOKEN is set (404 otherwise, as for any unknown path):
 * `GET /admin/keys` (prefixes, plans, e-mails) and `POST /admin/keys/plan {email, plan}`, which
 * takes effect at once. `devtoolbox keys` calls them while a server owns the data dir. The token
 * is compared in constant time (as SHA-256 digests, so its length leaks nothing either) and never
 * logged; these routes take no API key and count against no limit.
 */
export function adminRoutes(app: Hono, kit: RouteKit, services: Services): void {
  const token = services.config.adminToken;
  if (token === null) return;
  const expected = digest(token);
  const authorised = (c: Context): boolean => {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(c.req.header('authorization') ?? '');
    return m !== null && timingSafeEqual(digest(m[1]!), expected);
  };
  const refuse = (c: Context) =>
    kit.errorResponse(c, new ToolError('UNAUTHORIZED', 'The admin routes need Authorization: Bearer <ADMIN_TOKEN>', undefined, { 'WWW-Authenticate': 'Bearer realm="devtoolbox-admin"' }));

  app.get('/admin/keys', async (c) => {
    if (!authorised(c)) return refuse(c);
    const keys = await listApiKeys(services.store);
    return c.json({ success: true, keys: keys.map((k) => ({ key_prefix: k.key_prefix, plan: k.plan, created_at: k.created_at, email: k.email })) }, 200, { 'Cache-Control': 'no-store' });
  });

  app.post('/admin/keys/plan', async (c) => {
    if (!authorised(c)) return refuse(c);
    try {
      const body = await kit.readJson(c);
      if (!isPlainObject(body)) throw new ToolError('INVALID_INPUT', 'The body must be {"email": "...", "plan": "free" | "pro"}');
      const email = normaliseEmail(body.email);
      const plan = body.plan;
      if (typeof plan !== 'string' || !isPlanName(plan)) throw new ToolError('INVALID_INPUT', `plan must be ${PLAN_NAMES.join(' or ')}`);
      const rec = await setPlan(services.store, email, plan);
      if (!rec) throw new ToolError('NOT_FOUND', `No API key is registered for ${email}`);
      services.auth.planChanged(rec.key_id, rec.plan);
      services.log.info(`admin: ${rec.key_prefix}… is now on the ${rec.plan} plan`);
      return c.json({ success: true, email: rec.email, key_prefix: rec.key_prefix, plan: rec.plan }, 200, { 'Cache-Control': 'no-store' });
    } catch (err) {
      return kit.errorResponse(c, err);
    }
  });
}
