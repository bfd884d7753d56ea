import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Context, Hono } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';
import type Provider from 'oidc-provider';
import type { Interaction } from 'oidc-provider';
import type { Services } from '../services.js';
import type { RouteKit } from './kit.js';
import { ToolError } from '../errors.js';
import { readBodyText } from './body.js';
import { headersOf } from './headers.js';
import { singleWindowHeaders } from '../auth/limiter.js';
import { createApiKey, Email, findApiKey, KEY_PATTERN } from '../auth/keys.js';
import type { OAuthSecretRecord } from '../auth/oauth/secrets.js';
import { errorPage, formPageHeaders, PAGE_HEADERS, signInPage } from '../auth/oauth/page.js';
import { dcrCounter, dcrSubject } from '../auth/oauth/limits.js';
import { createOAuthServer, type OAuthServer } from '../auth/oauth/server.js';
import { OAUTH_SCOPE, protectedResourceMetadata } from '../auth/oauth/urls.js';

interface NodeEnv {
  incoming: IncomingMessage;
  outgoing: ServerResponse;
}

function nodeEnv(env: unknown): NodeEnv | undefined {
  const e = env as Partial<NodeEnv> | undefined;
  return e?.incoming && e.outgoing ? (e as NodeEnv) : undefined;
}

/**
 * Mounts the authorization server and the protected resource's metadata:
 * - `/.well-known/oauth-protected-resource[/mcp]` (RFC 9728), ours;
 * - `/.well-known/oauth-authorization-server` (RFC 8414) and `/.well-known/openid-configuration`:
 *   oidc-provider's discovery document;
 * - `/oauth/interaction/{uid}`: the sign-in page (ours);
 * - everything else under `/oauth/`: oidc-provider (authorize, token, register, revoke, jwks).
 * oidc-provider answers on node's own request and response (served by @hono/node-server); an
 * in-process `app.request()` has none, and gets 501.
 */
export function mountOAuth(app: Hono, services: Services, kit: RouteKit): OAuthServer {
  const server = createOAuthServer(services);
  const urls = server.urls;

  const prm = JSON.stringify(protectedResourceMetadata(urls));
  const prmAnswer = () => new Response(prm, { status: 200, headers: { 'content-type': 'application/json', 'cache-control': 'public, max-age=3600', 'access-control-allow-origin': '*' } });
  app.get('/.well-known/oauth-protected-resource', prmAnswer);
  app.get('/.well-known/oauth-protected-resource/mcp', prmAnswer);
  app.get('/.well-known/oauth-protected-resource/mcp/auth', prmAnswer);

  /** Hands the request to oidc-provider (its own path rewritten when given). */
  // How a browser or client reaches this server: the scheme and host of PUBLIC_BASE_URL, whatever
  // the last hop was (a proxy that ends TLS speaks plain HTTP here). oidc-provider builds its
  // endpoints' URLs and decides its cookies' Secure flag from these (provider.proxy is on); the
  // client's own forwarded headers are never taken.
  const publicUrl = new URL(services.config.publicBaseUrl);
  const seenPublicly = (node: NodeEnv) => {
    node.incoming.headers['x-forwarded-proto'] = publicUrl.protocol.slice(0, -1);
    node.incoming.headers['x-forwarded-host'] = publicUrl.host;
  };
  const delegate = async (c: Context, path?: string): Promise<Response> => {
    const node = nodeEnv(c.env);
    if (!node) return kit.errorResponse(c, new ToolError('NOT_FOUND', 'The authorization server is served over HTTP only'));
    seenPublicly(node);
    const { provider } = await server.provider();
    if (path !== undefined) node.incoming.url = path;
    await provider.callback()(node.incoming, node.outgoing);
    return RESPONSE_ALREADY_SENT;
  };
  app.get('/.well-known/oauth-authorization-server', (c) => delegate(c, '/.well-known/openid-configuration'));
  app.get('/.well-known/openid-configuration', (c) => delegate(c));

  const page = (html: string, status = 200, details?: Interaction) =>
    new Response(html, { status, headers: details ? formPageHeaders(String(details.params.redirect_uri ?? '')) : PAGE_HEADERS });
  const csrfOf = (secrets: OAuthSecretRecord, uid: string) => createHmac('sha256', secrets.cookie_key).update(`csrf\0${uid}`).digest('base64url');

  /** The interaction behind the request's cookie, or an error page (expired, replayed, no cookie). */
  const interaction = async (c: Context): Promise<{ details: Interaction; provider: Provider; secrets: OAuthSecretRecord; node: NodeEnv } | Response> => {
    const node = nodeEnv(c.env);
    if (!node) return page(errorPage('not_served', 'Sign-in is served over HTTP only.'), 501);
    seenPublicly(node);
    const { provider, secrets } = await server.provider();
    try {
      const details = await provider.interactionDetails(node.incoming, node.outgoing);
      if (details.uid !== c.req.param('uid')) return page(errorPage('invalid_request', 'This sign-in page belongs to another request; start again from your client.'), 400);
      return { details, provider, secrets, node };
    } catch {
      return page(errorPage('session_expired', 'This sign-in request has expired or was already used; start again from your client.'), 400);
    }
  };

  /** What the page shows of the client: its name and the host it sends the user back to. */
  const view = async (provider: Provider, secrets: OAuthSecretRecord, details: Interaction, extra: { error?: string; newKey?: string } = {}) => {
    const clientId = String(details.params.client_id ?? '');
    const client = await provider.Client.find(clientId);
    let redirectHost = '';
    try {
      redirectHost = new URL(String(details.params.redirect_uri ?? '')).host;
    } catch {
      redirectHost = '(unknown)';
    }
    return signInPage({ uid: details.uid, csrf: csrfOf(secrets, details.uid), clientName: client?.clientName ?? clientId, redirectHost, ...extra });
  };

  app.get('/oauth/interaction/:uid', async (c) => {
    const it = await interaction(c);
    if (it instanceof Response) return it;
    return page(await view(it.provider, it.secrets, it.details), 200, it.details);
  });

  app.post('/oauth/interaction/:uid', async (c) => {
    const it = await interaction(c);
    if (it instanceof Response) return it;
    const { details, provider, secrets, node } = it;
    const form = await formOf(c);
    if (!form) return page(errorPage('invalid_request', 'The form could not be read.'), 400);
    // Compared as bytes: a field of as many characters but other bytes (not ASCII) is refused, not thrown.
    const csrf = Buffer.from(form.get('csrf') ?? '');
    const expected = Buffer.from(csrfOf(secrets, details.uid));
    if (csrf.length !== expected.length || !timingSafeEqual(csrf, expected)) {
      return page(errorPage('invalid_request', 'The form was not sent from this sign-in page (CSRF check failed).'), 403);
    }
    const action = form.get('action');
    if (action === 'deny') {
      const to = await provider.interactionResult(node.incoming, node.outgoing, { error: 'access_denied', error_description: 'The user denied the request' }, { mergeWithLastSubmission: false });
      return c.redirect(to, 303);
    }
    if (action === 'register') {
      const email = Email.safeParse(form.get('email') ?? '');
      if (!email.success) return page(await view(provider, secrets, details, { error: `E-mail ${email.error.issues[0]?.message ?? 'is not valid'}` }), 400, details);
      const who = await kit.caller(c);
      if (services.auth.enabled) {
        const w = await services.auth.register.take(who.ip);
        if (!w.allowed) {
          const retry = singleWindowHeaders(w, 'register')['Retry-After'];
          return page(await view(provider, secrets, details, { error: `Too many registrations from this address: ${w.limit} per hour; retry after ${retry} s` }), 429, details);
        }
      }
      try {
        const { api_key, record } = await createApiKey(services.store, email.data, services.clock.now());
        services.log.info(`api key registered at sign-in: ${record.key_id} (${record.plan})`);
        return page(await view(provider, secrets, details, { newKey: api_key }), 200, details);
      } catch (err) {
        if (err instanceof ToolError && err.code === 'CONFLICT') return page(await view(provider, secrets, details, { error: 'That address already has a key: paste it above.' }), 409, details);
        throw err;
      }
    }
    if (action !== 'approve') return page(errorPage('invalid_request', 'Unknown action.'), 400);
    const key = (form.get('api_key') ?? '').trim();
    const rec = KEY_PATTERN.test(key) ? await findApiKey(services.store, key) : undefined;
    if (!rec) return page(await view(provider, secrets, details, { error: 'That is not a known API key.' }), 401, details);
    const clientId = String(details.params.client_id ?? '');
    const grant = new provider.Grant({ accountId: rec.key_id, clientId });
    // The token's scope is `mcp` on our one resource; the scopes asked of the server itself as asked.
    const oidc = String(details.params.scope ?? '').split(' ').filter((s) => s === 'openid' || s === 'offline_access' || s === OAUTH_SCOPE);
    if (oidc.length > 0) grant.addOIDCScope(oidc.join(' '));
    grant.addResourceScope(urls.resource, OAUTH_SCOPE);
    const grantId = await grant.save();
    services.log.info(`oauth: ${rec.key_id} approved client ${clientId}`);
    const to = await provider.interactionResult(node.incoming, node.outgoing, { login: { accountId: rec.key_id }, consent: { grantId } }, { mergeWithLastSubmission: false });
    return c.redirect(to, 303);
  });

  // An authorization request without `scope` gets the default (RFC 6749 §3.3), our one scope:
  // oidc-provider would deny it (no scope granted), as the conformance suite's code grant showed.
  app.get('/oauth/authorize', (c) => {
    const raw = nodeEnv(c.env)?.incoming.url;
    if (raw === undefined) return delegate(c);
    const q = raw.indexOf('?');
    const params = new URLSearchParams(q === -1 ? '' : raw.slice(q + 1));
    if (params.has('scope')) return delegate(c);
    params.set('scope', OAUTH_SCOPE);
    return delegate(c, `${q === -1 ? raw : raw.slice(0, q)}?${params.toString()}`);
  });

  // Dynamic Client Registration, bounded per client address (every instance counting together on Redis).
  const dcr = dcrCounter(services);
  const register = async (c: Context) => {
    if (services.auth.enabled) {
      const w = await dcr.take(dcrSubject((await kit.caller(c)).ip));
      if (!w.allowed) {
        const headers = singleWindowHeaders(w, 'oauth-register');
        return kit.errorResponse(c, new ToolError('RATE_LIMITED', `Too many client registrations from this address: ${w.limit} per hour; retry after ${headers['Retry-After']} s`, { limit: w.limit }, headers));
      }
    }
    return delegate(c);
  };
  app.post('/oauth/register', register);
  // oidc-provider's router ignores case and a trailing slash (POST /oauth/Register/ registers):
  // every spelling of the registration path is counted as the path itself is.
  app.all('/oauth/*', (c) => (c.req.method === 'POST' && isRegistrationPath(c.req.path) ? register(c) : delegate(c)));
  return server;
}

/** Whether `path` may be a spelling of the registration endpoint (another case or a trailing slash, which oidc-provider takes; doubled slashes and escapes too, to be safe). */
function isRegistrationPath(path: string): boolean {
  let p = path;
  try {
    p = decodeURIComponent(path);
  } catch {
    // not decodable: compared as it is
  }
  return p.toLowerCase().replace(/\/{2,}/g, '/').replace(/\/$/, '') === '/oauth/register';
}

/** The sign-in form's fields (urlencoded, at most 16 KiB), or undefined. */
async function formOf(c: Context): Promise<Map<string, string> | undefined> {
  const header = headersOf(c.req.raw, c.env);
  if (!(header('content-type') ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded')) return undefined;
  let text: string;
  try {
    text = await readBodyText(c.req.raw, 16 * 1024, header);
  } catch {
    return undefined;
  }
  const out = new Map<string, string>();
  for (const [k, v] of new URLSearchParams(text)) if (!out.has(k)) out.set(k, v);
  return out;
}
