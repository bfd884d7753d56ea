/**
 * The MCP SDK (v1, @modelcontextprotocol/sdk), and the only module that imports it: everything
 * our own dispatch (./dispatch.ts) does not answer — the legacy era's initialize, ping,
 * notifications, batches, malformed requests and progress streams over HTTP, and the whole
 * legacy era on stdio. The next SDK move changes this file.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ErrorCode as RpcErrorCode,
  InitializeRequestSchema,
  JSONRPCMessageSchema,
  JSONRPCRequestSchema,
  LATEST_PROTOCOL_VERSION,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type CallToolResult,
  type InitializeResult,
  type JSONRPCMessage,
  type ReadResourceResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';
import type { CallHeaders, CallPath } from '../core/call.js';
import type { Caller, Registry } from '../registry.js';
import { limiterSpeaksFor } from './admission.js';
import { errorResult, implementation, listing } from './answers.js';
import { isJsonContentType, LEGACY_VERSIONS } from './legacy.js';
import { isObject, withRequestId } from './wire.js';
import { declaresUi, notFoundMessage, UI_EXTENSION, ViewResources } from './resources.js';
import { joinHeaders } from '../lib/join-headers.js';

export interface McpOptions {
  registry: Registry;
  calls: CallPath;
  /** Where this server serves /icons/ (its PUBLIC_BASE_URL): initialize and tools/list name the icons. Absent on stdio. */
  iconBaseUrl?: string | undefined;
  /**
   * When tools/list names the tools' MCP Apps views: `request` (HTTP, the default: when the
   * request's session id says its initialize declared the extension, `RequestSlot.apps`;
   * ./session.ts) or `declared` (stdio, one client per server: after an initialize that declared it).
   */
  apps?: 'request' | 'declared' | undefined;
  /** The views served (./resources.ts); by default those the registry's tools name, as built. */
  views?: ViewResources | undefined;
}

/**
 * The request a server instance is serving: who calls, and the response metadata (limit
 * headers) the call produced. A pooled server serves one request at a time, so this is per
 * request without travelling through the SDK.
 */
export interface RequestSlot {
  caller: Caller;
  headers: CallHeaders | undefined;
  /** Told when a call of the request is admitted or refused (its headers are in the slot then). */
  admitted?: (() => void) | undefined;
  /** HTTP: the request belongs to a session that declared MCP Apps (./session.ts). */
  apps?: boolean | undefined;
  /** HTTP: the answer's X-Request-Id, named by its errors (stdio: none). */
  requestId?: string | undefined;
}


/**
 * tools/call as far as Protocol's own parse goes: any params. Registered with the strict
 * CallToolRequestSchema, a call whose `arguments` is not an object (or whose `name` is not a
 * string) failed that first parse with a bare ZodError, answered as -32603 Internal error; the
 * Server's tools/call wrapper, which runs next, answers the same request -32602 Invalid params.
 */
const LenientCallToolRequest = CallToolRequestSchema.extend({ params: z.unknown().optional() });

/**
 * initialize likewise: with the strict schema, `params: {}` (or none) failed Protocol's own parse
 * and was answered -32603 with a zod dump. Parsed here instead: -32602 with one line.
 */
const LenientInitializeRequest = InitializeRequestSchema.extend({ params: z.unknown().optional() });
const INITIALIZE_PARAMS_HELP =
  'Invalid params: initialize needs params.protocolVersion (a string), params.capabilities (an object) and params.clientInfo ({name, version})';

const CAPABILITIES = { tools: { listChanged: false } };
/** What initialize advertises to a client that declared MCP Apps (./resources.ts), when views are served. */
const APPS_CAPABILITIES = { tools: { listChanged: false }, resources: { listChanged: false }, extensions: { [UI_EXTENSION]: {} } };

/**
 * The answer to initialize, as the SDK's own handler gives it (its negotiation: the requested
 * revision when the SDK serves it, else its latest), from public exports of the SDK and our own
 * server info, capabilities and instructions: the SDK offers no public call for it, and its
 * private `_oninitialize` may change in any release. The SDK is pinned to a patch range
 * (`~1.32.2` in package.json: >=1.32.2 <1.33.0), and test/mcp-sdk-initialize.test.ts holds this
 * answer to the stock SDK server's, so a release that changes it fails there.
 */
function initializeResult(requested: string, instructions: string, serverInfo: InitializeResult['serverInfo'], capabilities = CAPABILITIES): InitializeResult {
  const protocolVersion = SUPPORTED_PROTOCOL_VERSIONS.includes(requested) ? requested : LATEST_PROTOCOL_VERSION;
  return { protocolVersion, capabilities, serverInfo: { ...serverInfo }, ...(instructions && { instructions }) };
}

/**
 * A low-level SDK `Server` whose handlers read the registry. Cheap to build: the tool listing
 * and JSON Schemas are computed once per registry, not per server.
 */
export class McpFactory {
  readonly #tools: Tool[];
  /** The listing naming the views (./resources.ts); the plain one when no view is served. */
  readonly #appTools: Tool[];
  readonly #views: ViewResources;
  readonly #info: InitializeResult['serverInfo'];
  constructor(readonly opts: McpOptions) {
    this.#views = opts.views ?? new ViewResources(opts.registry);
    this.#tools = listing(opts.registry, opts.iconBaseUrl) as Tool[];
    this.#appTools = this.#views.size > 0 ? (listing(opts.registry, opts.iconBaseUrl, this.#views) as Tool[]) : this.#tools;
    this.#info = implementation(opts.iconBaseUrl);
  }

  /** A server whose calls are made as `slot.caller`; their headers are left in the slot. */
  create(slot: RequestSlot): Server {
    const { registry, calls } = this.opts;
    const instructions = registry.instructions;
    const info = this.#info;
    const views = this.#views;
    const server = new Server({ ...info }, { capabilities: views.size > 0 ? APPS_CAPABILITIES : CAPABILITIES, instructions });
    /** Whether this server's client declared MCP Apps in its initialize (a stdio session's server serves one client). */
    let declared = false;
    server.removeRequestHandler('initialize');
    server.setRequestHandler(LenientInitializeRequest, async (raw) => {
      const parsed = InitializeRequestSchema.safeParse(raw);
      if (!parsed.success) throw new McpError(RpcErrorCode.InvalidParams, INITIALIZE_PARAMS_HELP);
      // A client that did not declare the extension gets exactly the answer it always got.
      const apps = views.size > 0 && declaresUi(parsed.data.params.capabilities);
      if (this.opts.apps === 'declared') declared = apps;
      return initializeResult(parsed.data.params.protocolVersion, instructions, info, apps ? APPS_CAPABILITIES : CAPABILITIES);
    });
    const tools = this.#tools;
    const appTools = this.#appTools;
    const perRequest = this.opts.apps !== 'declared';
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: (perRequest ? slot.apps === true : declared) ? appTools : tools }));
    if (views.size > 0) {
      // Served to every legacy client (as before sessions carried the declaration): harmless to
      // one that never asks, and a host may read a view without a session.
      server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: [...views.list] }));
      server.setRequestHandler(ReadResourceRequestSchema, async (req): Promise<ReadResourceResult> => {
        const read = views.read(req.params.uri);
        if (!read) throw new McpError(RpcErrorCode.InvalidParams, notFoundMessage(req.params.uri), { uri: req.params.uri });
        return { contents: read.contents };
      });
    }
    // LenientCallToolRequest: see its comment. The SDK's Server still checks the request against
    // CallToolRequestSchema (→ -32602 Invalid params) before this handler runs.
    server.setRequestHandler(LenientCallToolRequest, async (raw, extra): Promise<CallToolResult> => {
      const req = raw as CallToolRequest;
      const tool = registry.get(req.params.name);
      if (!tool) throw new McpError(RpcErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
      const token = req.params._meta?.progressToken;
      const progress =
        token === undefined
          ? undefined
          : async (progress: number, total?: number, message?: string): Promise<void> => {
              try {
                await extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken: token, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
                });
              } catch {
                // A client that went away does not fail the call.
              }
            };
      const out = await calls.call(slot.caller, tool, req.params.arguments ?? {}, {
        era: 'legacy',
        signal: extra.signal,
        progress,
        // A batch makes several calls on one server: their headers add up, the last one wins.
        onHeaders: (h) => {
          slot.headers = slot.headers ? joinHeaders(slot.headers, h) : h;
          slot.admitted?.();
        },
      });
      if (!out.ok) return errorResult(out.error, slot.requestId);
      const r = out.value;
      const content: CallToolResult['content'] = [...(r.content ?? [])];
      content.push({ type: 'text', text: JSON.stringify(r.json) });
      return { content, structuredContent: r.json };
    });
    return server;
  }
}

/** The legacy era on stdio: an SDK server whose input we feed, line by line, and whose output we write. */
export interface LegacyPeer {
  /** One parsed message from stdin (checked against the JSON-RPC schema here, as the SDK's stdio transport does). */
  deliver(message: unknown): void;
  close(): Promise<void>;
}

export async function legacyStdioPeer(opts: McpOptions, caller: Caller, write: (line: string) => void, onerror: (err: Error) => void): Promise<LegacyPeer> {
  const server = new McpFactory(opts).create({ caller, headers: undefined });
  const transport = new FeedTransport(write);
  transport.onerror = onerror;
  await server.connect(transport);
  server.onerror = onerror;
  return { deliver: (m) => transport.deliver(m), close: () => server.close() };
}

/** The SDK's stdio transport without the stream handling: messages in from our reader, out to our writer. */
class FeedTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  constructor(readonly write: (line: string) => void) {}
  async start(): Promise<void> {}
  async send(message: JSONRPCMessage): Promise<void> {
    this.write(JSON.stringify(message));
  }
  async close(): Promise<void> {
    this.onclose?.();
  }
  deliver(message: unknown): void {
    const r = JSONRPCMessageSchema.safeParse(message);
    if (!r.success) this.onerror?.(new Error(`Not a JSON-RPC message: ${r.error.message}`));
    else this.onmessage?.(r.data);
  }
}

/**
 * A transport that carries exactly one JSON-RPC request in and its response out. Each pooled
 * server is connected to one of these once; a request checks a server out, so responses can
 * never cross between callers even when their JSON-RPC ids collide.
 */
class OneShotTransport implements Transport {
  onmessage?: Transport['onmessage'];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  #resolve: ((m: JSONRPCMessage) => void) | null = null;

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    // Only the response matters; notifications cannot be delivered on a JSON response.
    if (('result' in message || 'error' in message) && this.#resolve) {
      const r = this.#resolve;
      this.#resolve = null;
      r(message);
    }
  }

  async close(): Promise<void> {
    this.onclose?.();
  }

  dispatch(message: JSONRPCMessage): Promise<JSONRPCMessage> {
    return new Promise((resolve) => {
      this.#resolve = resolve;
      this.onmessage?.(message);
    });
  }
}

const POOL_MAX = 64;

/**
 * The SDK's share of POST /mcp (legacy era, stateless): what our own dispatch leaves to it. A
 * single well-formed JSON-RPC request without a progressToken (initialize, ping, an unknown
 * tool, …) is served by a pooled server on a one-shot transport, no per-request set-up.
 * Everything else (batches, notifications, odd headers, calls that want progress over SSE) goes
 * through the SDK's own WebStandardStreamableHTTPServerTransport, one per request, so its
 * answers stay the SDK's.
 */
export class McpHttpHandler {
  readonly #factory: McpFactory;
  readonly #pool: Array<{ server: Server; transport: OneShotTransport; slot: RequestSlot }> = [];

  constructor(opts: McpOptions) {
    this.#factory = new McpFactory(opts);
  }

  /**
   * One POST /mcp. `parsedBody` undefined: the body did not parse (the SDK answers that).
   * `requestId`: the answer's X-Request-Id, which its errors name — the SDK's protocol errors
   * (`error.data.request_id`) as well as a failed call's error object.
   */
  async handle(req: Request, parsedBody: unknown, caller: Caller, apps = false, requestId?: string): Promise<Response> {
    if (this.#fastPathOk(req, parsedBody)) {
      const pooled = this.#pool.pop() ?? (await this.#newPooled());
      pooled.slot.caller = caller;
      pooled.slot.headers = undefined;
      pooled.slot.apps = apps;
      pooled.slot.requestId = requestId;
      try {
        const reply = await pooled.transport.dispatch(parsedBody as JSONRPCMessage);
        if ('error' in reply) reply.error.data = withRequestId(reply.error.data, requestId);
        // (Set by the call's onHeaders while dispatching: not the undefined written above.)
        const headers = pooled.slot.headers as CallHeaders | undefined;
        return new Response(JSON.stringify(reply), { status: 200, headers: headers ? { 'content-type': 'application/json', ...headers } : JSON_HEADERS });
      } finally {
        if (this.#pool.length < POOL_MAX) this.#pool.push(pooled);
        else void pooled.server.close();
      }
    }
    return this.#stock(req, parsedBody, caller, apps, requestId);
  }

  async #newPooled(): Promise<{ server: Server; transport: OneShotTransport; slot: RequestSlot }> {
    const slot: RequestSlot = { caller: { keyId: null, ip: 'unknown', transport: 'mcp-http' }, headers: undefined };
    const server = this.#factory.create(slot);
    const transport = new OneShotTransport();
    await server.connect(transport);
    return { server, transport, slot };
  }

  #fastPathOk(req: Request, body: unknown): boolean {
    const accept = req.headers.get('accept') ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
    if (!isJsonContentType(req.headers.get('content-type'))) return false;
    const pv = req.headers.get('mcp-protocol-version');
    if (pv !== null && !LEGACY_VERSIONS.includes(pv)) return false;
    if (!JSONRPCRequestSchema.safeParse(body).success) return false;
    const b = body as { method: string; params?: { _meta?: { progressToken?: unknown } } };
    // Progress needs an SSE response; the stock transport streams it.
    if (b.params?._meta?.progressToken !== undefined) return false;
    return true;
  }

  async #stock(req: Request, parsedBody: unknown, caller: Caller, apps: boolean, requestId: string | undefined): Promise<Response> {
    const wantsStream =
      typeof parsedBody === 'object' && parsedBody !== null && !Array.isArray(parsedBody) &&
      (parsedBody as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken !== undefined;
    const slot: RequestSlot = { caller, headers: undefined, apps, requestId };
    let admitted = () => {};
    // Only a stream's headers can go before the call is admitted.
    const admission = wantsStream ? new Promise<void>((r) => (admitted = r)) : undefined;
    slot.admitted = admitted;
    const server = this.#factory.create(slot);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsStream });
    await server.connect(transport);
    if (requestId !== undefined) namingErrors(transport, requestId);
    const close = () =>
      setImmediate(() => {
        void transport.close().catch(() => {});
        void server.close().catch(() => {});
      });
    let res: Response;
    try {
      res = await transport.handleRequest(req, parsedBody === undefined ? {} : { parsedBody });
    } catch (err) {
      close();
      throw err;
    }
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      close();
      // The transport's own refusals (-32700 Parse error, 406, 415 …) never pass through send.
      if (requestId !== undefined && res.status >= 400 && res.body) res = await namedRefusal(res, requestId);
      return slot.headers === undefined ? res : new Response(res.body, { status: res.status, statusText: res.statusText, headers: withHeaders(res.headers, slot.headers) });
    }
    // SSE: release the server only when the stream has been read to its end. The stream opens
    // before the call has run; its limit headers wait for the limiter's answer, or for the first
    // message on the stream (a request that made no call: its answer), or its end. The readable
    // side holds one message, so the first one passes through before anyone reads.
    const passthrough = new TransformStream<Uint8Array, Uint8Array>(
      {
        transform: (chunk, c) => {
          c.enqueue(chunk);
          admitted();
        },
        flush: () => {
          admitted();
          close();
        },
      },
      undefined,
      { highWaterMark: 1 },
    );
    const body = res.body.pipeThrough(passthrough);
    if (admission && slot.headers === undefined && limiterSpeaksFor(this.#factory.opts.calls, caller)) await admission;
    return new Response(body, { status: res.status, headers: withHeaders(res.headers, slot.headers) });
  }
}

/** Every JSON-RPC error the server sends through `transport` (JSON or SSE answer) names the request. */
function namingErrors(transport: Transport, requestId: string): void {
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if ('error' in message) message.error.data = withRequestId(message.error.data, requestId);
    return send(message, options);
  };
}

/** A JSON-RPC error answer of the SDK's transport itself, its error naming the request (other bodies unchanged). */
async function namedRefusal(res: Response, requestId: string): Promise<Response> {
  const text = await res.text();
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return new Response(text, res);
  }
  if (!isObject(msg) || !isObject(msg.error)) return new Response(text, res);
  msg.error.data = withRequestId(msg.error.data, requestId);
  return new Response(JSON.stringify(msg), res);
}

/** A response's headers with a call's limit headers over them. */
function withHeaders(base: Headers, extra: CallHeaders | undefined): Headers {
  const headers = new Headers(base);
  if (extra) for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return headers;
}

const JSON_HEADERS = { 'content-type': 'application/json' };
