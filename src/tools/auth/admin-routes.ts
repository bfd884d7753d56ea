import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { API_KEYS, Email, listApiKeys, setPlan } from '../../auth/keys.js';
import { grantsOf, revokeGrantsOf } from '../../auth/oauth/adapter.js';
import { PLAN_NAMES } from '../../auth/plans.js';
import { defineRoute, type AnyRoute, type RouteContext } from '../../core/route.js';
import { ToolError } from '../../errors.js';
import type { Services } from '../../services.js';

const digest = (s: string) => createHash('sha256').update(s).digest();
const NO_STORE = { 'Cache-Control': 'no-store' };

/**
 * The token is compared in constant time (as SHA-256 digests, so its length leaks nothing
 * either) and never logged.
 */
function requireAdmin(ctx: RouteContext): void {
  const token = ctx.services.config.adminToken;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(ctx.header('authorization') ?? '');
  if (token !== null && m !== null && timingSafeEqual(digest(m[1]!), digest(token))) return;
  throw new ToolError('UNAUTHORIZED', 'The admin routes need Authorization: Bearer <ADMIN_TOKEN>', undefined, { 'WWW-Authenticate': 'Bearer realm="devtoolbox-admin"' });
}

/** Only when ADMIN_TOKEN is set (404 otherwise, as for any unknown path); no API key, no limit. */
const admin = { enabled: (services: Services) => services.config.adminToken !== null, before: requireAdmin };

const PlanChange = z.object(
  {
    email: Email,
    plan: z.enum(PLAN_NAMES, { error: `must be ${PLAN_NAMES.join(' or ')}` }),
  },
  { error: 'must be {"email": "...", "plan": "free" | "pro"}' },
);

/**
 * The operator's routes: `GET /admin/keys` (prefixes, plans, e-mails, sign-in grants),
 * `POST /admin/keys/plan {email, plan}`, which takes effect at once, and
 * `POST /admin/keys/revoke-grants {email}`. `devtoolbox keys` calls
 * them while a server owns the data dir. Undocumented in OpenAPI (not part of the public API).
 */
export const adminRoutes: readonly AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/admin/keys',
    ...admin,
    handler: async (_input, { services }) => {
      const keys = await listApiKeys(services.store);
      const rows = [];
      for (const k of keys) {
        // A key's sign-ins (OAuth grants), when it has any.
        const grants = (await grantsOf(services.store, k.key_id)).map((g) => ({ client_id: g.clientId, expires_at: g.expiresAt === null ? null : new Date(g.expiresAt).toISOString() }));
        rows.push({ key_prefix: k.key_prefix, plan: k.plan, created_at: k.created_at, email: k.email, ...(grants.length > 0 ? { grants } : {}) });
      }
      return { body: { keys: rows }, headers: NO_STORE };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/keys/plan',
    ...admin,
    input: { body: PlanChange },
    handler: async ({ body: { email, plan } }, { services }) => {
      const rec = await setPlan(services.store, email, plan);
      if (!rec) throw new ToolError('NOT_FOUND', `No API key is registered for ${email}`);
      services.auth.planChanged(rec.key_id, rec.plan);
      services.log.info(`admin: ${rec.key_prefix}… is now on the ${rec.plan} plan`);
      return { body: { email: rec.email, key_prefix: rec.key_prefix, plan: rec.plan }, headers: NO_STORE };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/admin/keys/revoke-grants',
    ...admin,
    input: { body: z.object({ email: Email }, { error: 'must be {"email": "..."}' }) },
    handler: async ({ body: { email } }, { services }) => {
      const rec = await services.store.collection(API_KEYS).get(email);
      if (!rec) throw new ToolError('NOT_FOUND', `No API key is registered for ${email}`);
      const revoked = await revokeGrantsOf(services.store, rec.key_id);
      services.log.info(`admin: ${revoked} grant(s) of ${rec.key_prefix}… revoked`);
      return { body: { email: rec.email, key_prefix: rec.key_prefix, revoked }, headers: NO_STORE };
    },
  }),
];
