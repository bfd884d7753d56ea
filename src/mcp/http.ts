import type { Context, Hono } from 'hono';
import { ConfigError, type Config } from '../config.js';
import type { CallPath } from '../core/call.js';
import type { RouteKit } from '../http/kit.js';
import { ToolError } from '../errors.js';
import { isJsonType, readBodyText } from '../http/body.js';
import type { DirectRoutes } from '../http/direct.js';
import { headersOf } from '../http/headers.js';
import { requestIdOf } from '../http/request-log.js';
import { restBindings, type Caller, type Registry } from '../registry.js';
import { Dispatcher } from './dispatch.js';
import { LEGACY_VERSIONS, sdkWouldAccept } from './legacy.js';
import type { McpHttpHandler } from './server.js';
import { choose, narrow, SelectionCache, splitList } from './toolsets.js';
import type { SessionState, UiSessions } from './session.js';
import { RPC, rpcError, type HeaderLookup } from './wire.js';
import type { TaskManager } from '../core/tasks/index.js';
import { joinHeaders } from '../lib/join-headers.js';
import { fromKeyCache, keyGone } from '../auth/auth.js';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** What answers /mcp for one registry: our dispatch, and the SDK's share (built on first use). */
interface Face {
  dispatch: Dispatcher;
  sdk: () => Promise<McpHttpHandler>;
}

type Body = ConstructorParameters<typeof Response>[0];

function json(status: number, body: string | Uint8Array, headers?: Readonly<Record<string, string>>): Response {
  // A Uint8Array body takes @hono/node-server's direct write path, as a string does.
  return new Response(body as Body, { status, headers: headers ? joinHeaders(JSON_HEADERS, headers) : JSON_HEADERS });
}

/** `res` with one more header (the SDK's responses may not be ours to change). */
function withHeader(res: Response, name: string, value: string): Response {
  const headers = new Headers(res.headers);
  headers.set(name, value);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

/**
 * One JSON-RPC `tools/call` request (not a batch) answered as one reply: its limits are checked
 * before it runs, and the reply is not sent before the check — neither a stream (a progress
 * token) nor a task (answered at once, the call run afterwards).
 */
function isPlainToolCall(body: unknown): boolean {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
  const b = body as { method?: unknown; params?: { task?: unknown; _meta?: { progressToken?: unknown } } };
  return b.method === 'tools/call' && b.params?.task === undefined && b.params?._meta?.progressToken === undefined;
}

/** The request id of a parsed body, if it has one (errors echo it). */
function idOf(body: unknown): string | number | null {
  const id = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/**
 * `POST /mcp` (and 405 for every other method): MCP over streamable HTTP, stateless, both protocol eras.
 * Reads the body (the largest tool limit, then the called tool's own), resolves the caller,
 * and hands the request to our dispatch (./dispatch.ts); what it does not take goes to the SDK
 * (./server.ts). Errors of our own that the spec gives no code use -32600 Invalid Request
 * (never the legacy -32000…-32019 range).
 */
export function mountMcp(
  app: Hono,
  deps: {
    registry: Registry;
    calls: CallPath;
    tasks?: TaskManager | undefined;
    config: Config;
    kit: RouteKit;
    direct: DirectRoutes;
    /** Sign-in (OAuth): /mcp/auth, and /mcp with MCP_AUTH=required, answer a tokenless request 401 with its challenge. */
    signIn?: { challenge(): string } | undefined;
    /** Legacy sessions that carry an MCP Apps declaration (./session.ts); without it, none is issued. */
    sessions?: UiSessions | undefined;
  },
): void {
  const { registry, calls, config, kit } = deps;
  // Icons only here: this server serves /icons/ under PUBLIC_BASE_URL (a stdio server serves none).
  const iconBaseUrl = config.publicBaseUrl;
  /** Our dispatch and the SDK's share for one registry (all tools, or a toolset selection). */
  const face = (reg: Registry, cacheScope: 'public' | 'private'): Face => {
    let sdkHandler: Promise<McpHttpHandler> | undefined;
    return {
      dispatch: new Dispatcher({ registry: reg, calls, tasks: deps.tasks, legacyVersions: LEGACY_VERSIONS, iconBaseUrl, cacheScope }),
      sdk: () => (sdkHandler ??= import('./server.js').then((m) => new m.McpHttpHandler({ registry: reg, calls, iconBaseUrl }))),
    };
  };
  // The operator's default toolsets (TOOLSETS): the answer for a request that names none.
  const chosen = config.toolsets ? choose(registry, config.toolsets, []) : undefined;
  if (chosen && 'error' in chosen) throw new ConfigError(`TOOLSETS: ${chosen.error}`);
  const byDefault = face(chosen ? narrow(registry, chosen.names) : registry, 'public');
  // A tool's body limit applies on every face (its REST binding says `large`: file_process,
  // image_convert): of every tool, whatever toolset a request selects.
  const largeBody = new Set(registry.tools.filter((t) => restBindings(t).some((b) => b.bodyLimit === 'large')).map((t) => t.name));
  // A client's own selection: private cache scope (a header may have chosen it; docs/toolsets in README).
  const selections = new SelectionCache((names) => face(narrow(registry, names), 'private'));
  /** The face a request chose (?toolsets= / ?tools= / X-MCP-Toolsets / X-MCP-Tools), or its 400. */
  const faceOf = (url: string, header: HeaderLookup, id: string | number | null, requestId: string | undefined): Face | Response => {
    const q = url.indexOf('?');
    const params = q === -1 ? undefined : new URLSearchParams(url.slice(q + 1));
    const sets = [...splitList(params?.get('toolsets')), ...splitList(header('x-mcp-toolsets'))];
    const tools = [...splitList(params?.get('tools')), ...splitList(header('x-mcp-tools'))];
    const c = choose(registry, sets, tools);
    if (c === undefined) return byDefault;
    if ('error' in c) return json(400, rpcError(id, RPC.InvalidParams, c.error, { unknown: c.unknown, valid: c.valid }, requestId));
    // Every tool, with no operator default: the default answer, byte for byte.
    return c.names.length === registry.tools.length && !chosen ? byDefault : selections.get(c);
  };
  // The SDK's share is rare (see ./legacy.ts): imported in the background, starting now, while
  // the store loads (the main thread mostly waits for the load workers then). Imported after
  // ready instead, its ≈ 0.12 s of module evaluation stalled the first requests.
  void byDefault.sdk().catch(() => {});
  // /mcp reads up to the largest limit, then applies the called tool's own.
  const readLimit = largeBody.size > 0 ? Math.max(config.bodyLimit, config.largeBodyLimit) : config.bodyLimit;
  const tooLarge = (id: string | number | null, limit: number, requestId: string | undefined) =>
    json(413, rpcError(id, RPC.InvalidRequest, `Request body is larger than ${limit} bytes`, { limit }, requestId));

  /** POST /mcp, from the router or the direct route (the same answer either way); `signIn`: a caller must present a key or token. */
  const post = async (raw: Request, env: unknown, signIn = false): Promise<Response> => {
    try {
      // Node's own parsed headers when served by @hono/node-server (cheaper than the Headers wrapper).
      const header = headersOf(raw, env);
      // The answer's X-Request-Id: every JSON-RPC error of this request names it in its data.
      const requestId = requestIdOf(raw);

      // Cheap checks first: the key is known from the headers. A bad one is answered after reading
      // at most the small body limit (for the request id its JSON-RPC error echoes), never 10 MiB.
      let who: Caller | ToolError;
      try {
        // A key in the key cache gives its cached caller (issue 37): kept for a tool call, whose
        // limit check confirms the record; any other request looks it up below, as before.
        const w = kit.callerOf(raw, env, undefined, 'mcp-http', 'if-cached');
        who = w instanceof Promise ? await w : w;
      } catch (err) {
        if (!(err instanceof ToolError)) throw err;
        who = err;
      }
      if (signIn && deps.signIn && !(who instanceof ToolError) && who.keyId === null) {
        // The MCP authorization spec's discovery starts here: the 401's resource_metadata.
        who = new ToolError('UNAUTHORIZED', 'Sign-in required: send "Authorization: Bearer <access token or API key>"', undefined, { 'WWW-Authenticate': deps.signIn.challenge() });
      }
      const refused = who instanceof ToolError ? who : undefined;
      const unauthorised = (id: string | number | null, e: ToolError) =>
        // An MCP client shows a JSON-RPC error; a REST error body would read as "Server returned an error".
        json(e.status, rpcError(id, RPC.InvalidRequest, e.message, undefined, requestId), e.headers);
      let text: string;
      try {
        text = await readBodyText(raw, refused ? config.bodyLimit : readLimit, header);
      } catch (err) {
        if (refused) return unauthorised(null, refused);
        if (err instanceof ToolError && err.code === 'PAYLOAD_TOO_LARGE') return tooLarge(null, readLimit, requestId);
        throw err;
      }
      let parsed: unknown;
      let parsedOk = true;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsedOk = false;
      }
      // UTF-8 takes at most 3 bytes per UTF-16 unit: most bodies need no byte count.
      if (text.length * 3 > config.bodyLimit) {
        const p = parsed as { method?: unknown; params?: { name?: unknown } } | undefined;
        const large = parsedOk && p?.method === 'tools/call' && typeof p.params?.name === 'string' && largeBody.has(p.params.name);
        const limit = large ? readLimit : config.bodyLimit;
        if (Buffer.byteLength(text) > limit) return tooLarge(idOf(parsed), limit, requestId);
      }
      if (refused) return unauthorised(idOf(parsed), refused);
      if (fromKeyCache(who as Caller) && !(parsedOk && isPlainToolCall(parsed))) {
        // Not one tool call (initialize, a list, a batch…): nothing will check the cached record.
        try {
          const w = kit.callerOf(raw, env, undefined, 'mcp-http');
          who = w instanceof Promise ? await w : w;
        } catch (err) {
          if (!(err instanceof ToolError)) throw err;
          return unauthorised(idOf(parsed), err);
        }
      }
      // The default costs three lookups; a selection is parsed, and its face built once.
      let chosenFace = byDefault;
      if (raw.url.includes('?') || header('x-mcp-toolsets') !== null || header('x-mcp-tools') !== null) {
        const f = faceOf(raw.url, header, idOf(parsed), requestId);
        if (f instanceof Response) return f;
        chosenFace = f;
      }
      const { dispatch, sdk } = chosenFace;
      const caller = who as Caller;
      const contentType = header('content-type');
      if (!parsedOk || !isJsonType(contentType)) {
        // The SDK transport answers these (415, or -32700 for a body that does not parse) as it always did.
        const req = parsedOk ? raw : new Request(raw.url, { method: 'POST', headers: raw.headers, body: text });
        return (await sdk()).handle(req, parsedOk ? parsed : undefined, caller, false, requestId);
      }
      const fast = sdkWouldAccept(header('accept'), contentType);
      const sid = header('mcp-session-id');
      const session: SessionState = sid === null || !deps.sessions ? 'none' : await deps.sessions.check(sid);
      const answered = dispatch.http(parsed, header, caller, () => raw.signal, fast, session, requestId);
      const answer = answered instanceof Promise ? await answered : answered;
      // The SDK's share runs the request (a call included) before anything is answered.
      const bySdk = answer.kind === 'sdk' ? await (await sdk()).handle(raw, parsed, caller, session === 'ui', requestId) : undefined;
      // A cached key found gone by the call's limit check: the 401 a lookup would have answered.
      const gone = keyGone(caller);
      if (gone) return unauthorised(idOf(parsed), gone);
      switch (answer.kind) {
        case 'reply':
          return json(answer.reply.status, answer.reply.body, answer.reply.headers);
        case 'stream':
          return new Response(answer.body, { status: answer.status, headers: answer.headers });
        case 'accepted':
          return new Response(null, { status: 202 });
        case 'sdk': {
          const res = bySdk!;
          // A legacy initialize that declared MCP Apps: its session id carries the declaration.
          return deps.sessions && res.status === 200 && dispatch.opensUiSession(parsed) ? withHeader(res, 'mcp-session-id', await deps.sessions.issue()) : res;
        }
      }
    } catch (err) {
      return kit.errorFor(raw, err);
    }
  };
  const required = config.mcpAuth === 'required';
  app.post('/mcp', (c) => post(c.req.raw, c.env, required));
  deps.direct.add('POST', '/mcp', required ? (raw, env) => post(raw, env, true) : post);
  // The URL to paste into a hosted assistant: the same handler, asking a tokenless client to sign in.
  app.post('/mcp/auth', (c) => post(c.req.raw, c.env, true));
  deps.direct.add('POST', '/mcp/auth', (raw, env) => post(raw, env, true));
  const notAllowed = (c: Context) => {
    const requestId = requestIdOf(c.req.raw);
    const error = { code: RPC.InvalidRequest, message: 'Method not allowed: this server is stateless; use POST', ...(requestId !== undefined && { data: { request_id: requestId } }) };
    return c.json({ jsonrpc: '2.0', error, id: null }, 405, { Allow: 'POST' });
  };
  // Every other method (GET, DELETE, PUT, …): after POST, which therefore wins.
  app.all('/mcp', notAllowed);
  app.all('/mcp/auth', notAllowed);
}
