import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  ErrorCode as RpcErrorCode,
  JSONRPCRequestSchema,
  ListToolsRequestSchema,
  McpError,
  SUPPORTED_PROTOCOL_VERSIONS,
  type CallToolRequest,
  type CallToolResult,
  type JSONRPCMessage,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod/v4';
import { ToolError, toToolError } from './errors.js';
import { invokeTool } from './invoke.js';
import { toolSchemas } from './json-schema.js';
import type { AnyTool, Caller, Registry, ToolContext } from './registry.js';
import type { Services } from './services.js';

/** Checks a caller before a tool call (rate limits); throws ToolError to refuse. */
export type CallGuard = (caller: Caller, tool: AnyTool) => { headers?: Record<string, string> } | void;

export interface McpOptions {
  registry: Registry;
  services: Services;
  guard?: CallGuard;
  version?: string;
}

export const SERVER_INFO = { name: 'devtoolbox-mcp', version: '0.1.0' };

/** The tools/list answer, derived from the registry once. */
function listing(registry: Registry): Tool[] {
  return registry.tools.map((t) => {
    const s = toolSchemas(t);
    return {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: s.input as Tool['inputSchema'],
      outputSchema: s.output as Tool['outputSchema'],
      annotations: { title: t.title, ...t.annotations },
    };
  });
}

/** MCP error result in the contract's shape: one text block, no structuredContent. */
export function errorResult(err: ToolError): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: err.toJSON() }) }] };
}

/**
 * tools/call as far as Protocol's own parse goes: any params. Registered with the strict
 * CallToolRequestSchema, a call whose `arguments` is not an object (or whose `name` is not a
 * string) failed that first parse with a bare ZodError, answered as -32603 Internal error; the
 * Server's tools/call wrapper, which runs next, answers the same request -32602 Invalid params.
 */
const LenientCallToolRequest = CallToolRequestSchema.extend({ params: z.unknown() });

const callerKey = 'devtoolboxCaller';
const headersKey = 'devtoolboxHeaders';

/** Receives HTTP response headers a call produced (the guard's RateLimit-* / Retry-After). */
export type HeaderSink = (headers: Record<string, string>) => void;

function callerOf(authInfo: AuthInfo | undefined, fallback: Caller): Caller {
  const c = authInfo?.extra?.[callerKey];
  return (c as Caller | undefined) ?? fallback;
}

function headerSinkOf(authInfo: AuthInfo | undefined): HeaderSink | undefined {
  return authInfo?.extra?.[headersKey] as HeaderSink | undefined;
}

/**
 * Wraps a caller for the transports' `authInfo`, the SDK's per-request channel to handlers;
 * `onHeaders` collects headers for the HTTP response that carries the call's result.
 */
export function authInfoFor(caller: Caller, onHeaders?: HeaderSink): AuthInfo {
  return { token: '', clientId: 'devtoolbox', scopes: [], extra: { [callerKey]: caller, [headersKey]: onHeaders } };
}

/**
 * A low-level SDK `Server` whose handlers read the registry. Cheap to build: the tool listing
 * and JSON Schemas are computed once per registry, not per server.
 */
export class McpFactory {
  readonly #tools: Tool[];
  constructor(readonly opts: McpOptions) {
    this.#tools = listing(opts.registry);
  }

  create(defaultCaller: Caller): Server {
    const { registry, services, guard } = this.opts;
    const server = new Server(
      { ...SERVER_INFO, version: this.opts.version ?? SERVER_INFO.version },
      {
        capabilities: { tools: { listChanged: false } },
        instructions:
          'devtoolbox: developer tools for agents (format/convert JSON, YAML, XML, SQL; cron; number bases; HTML entities; time zones; QR codes; images; SEO; short links; a cron task manager; CSV/TSV/JSON/XML files).',
      },
    );
    const tools = this.#tools;
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
    // LenientCallToolRequest: see its comment. The SDK's Server still checks the request against
    // CallToolRequestSchema (→ -32602 Invalid params) before this handler runs.
    server.setRequestHandler(LenientCallToolRequest, async (raw, extra): Promise<CallToolResult> => {
      const req = raw as CallToolRequest;
      const tool = registry.get(req.params.name);
      if (!tool) throw new McpError(RpcErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`);
      const caller = callerOf(extra.authInfo, defaultCaller);
      const token = req.params._meta?.progressToken;
      const ctx: ToolContext = {
        caller,
        services,
        signal: extra.signal,
        progress: async (progress, total, message) => {
          if (token === undefined) return;
          try {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress, ...(total !== undefined ? { total } : {}), ...(message ? { message } : {}) },
            });
          } catch {
            // A client that went away does not fail the call.
          }
        },
      };
      try {
        const sink = headerSinkOf(extra.authInfo);
        try {
          const g = guard?.(caller, tool);
          if (g?.headers) sink?.(g.headers);
        } catch (err) {
          if (err instanceof ToolError && err.headers) sink?.(err.headers);
          throw err;
        }
        const r = await invokeTool(tool, req.params.arguments ?? {}, ctx);
        const content: CallToolResult['content'] = [...(r.content ?? [])];
        content.push({ type: 'text', text: JSON.stringify(r.json) });
        return { content, structuredContent: r.json };
      } catch (err) {
        return errorResult(toToolError(err, (m, c) => services.log.error(`${m} in ${tool.name}`, c)));
      }
    });
    return server;
  }
}

/** Serves the registry over stdio. Nothing but protocol goes to stdout. */
export async function serveStdio(opts: McpOptions): Promise<Server> {
  const server = new McpFactory(opts).create({ keyId: null, ip: 'stdio', transport: 'stdio' });
  await server.connect(new StdioServerTransport());
  return server;
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

  dispatch(message: JSONRPCMessage, authInfo: AuthInfo): Promise<JSONRPCMessage> {
    return new Promise((resolve) => {
      this.#resolve = resolve;
      this.onmessage?.(message, { authInfo });
    });
  }
}

function isJsonContentType(ct: string | null): boolean {
  if (!ct) return false;
  return ct.split(';')[0]!.trim().toLowerCase() === 'application/json';
}

const POOL_MAX = 64;

/**
 * Streamable HTTP, stateless. A single well-formed JSON-RPC request without a progressToken
 * (nearly every call) takes the fast path: a pooled server and a one-shot transport, no
 * per-request server or transport set-up. Everything else (batches, notifications, odd
 * headers, calls that want progress over SSE) goes through the SDK's own
 * WebStandardStreamableHTTPServerTransport, one per request, so its answers stay the SDK's.
 */
export class McpHttpHandler {
  readonly #factory: McpFactory;
  readonly #pool: Array<{ server: Server; transport: OneShotTransport }> = [];

  constructor(opts: McpOptions) {
    this.#factory = new McpFactory(opts);
  }

  async handle(req: Request, parsedBody: unknown, caller: Caller): Promise<Response> {
    const extraHeaders: Record<string, string> = {};
    const authInfo = authInfoFor(caller, (h) => Object.assign(extraHeaders, h));
    if (this.#fastPathOk(req, parsedBody)) {
      const slot = this.#pool.pop() ?? (await this.#newSlot());
      try {
        const reply = await slot.transport.dispatch(parsedBody as JSONRPCMessage, authInfo);
        return new Response(JSON.stringify(reply), { status: 200, headers: { 'content-type': 'application/json', ...extraHeaders } });
      } finally {
        if (this.#pool.length < POOL_MAX) this.#pool.push(slot);
        else void slot.server.close();
      }
    }
    return this.#stock(req, parsedBody, authInfo, caller, extraHeaders);
  }

  async #newSlot(): Promise<{ server: Server; transport: OneShotTransport }> {
    const server = this.#factory.create({ keyId: null, ip: 'unknown', transport: 'mcp-http' });
    const transport = new OneShotTransport();
    await server.connect(transport);
    return { server, transport };
  }

  #fastPathOk(req: Request, body: unknown): boolean {
    const accept = req.headers.get('accept') ?? '';
    if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
    if (!isJsonContentType(req.headers.get('content-type'))) return false;
    const pv = req.headers.get('mcp-protocol-version');
    if (pv !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(pv)) return false;
    if (!JSONRPCRequestSchema.safeParse(body).success) return false;
    const b = body as { method: string; params?: { _meta?: { progressToken?: unknown } } };
    // Progress needs an SSE response; the stock transport streams it.
    if (b.params?._meta?.progressToken !== undefined) return false;
    return true;
  }

  async #stock(req: Request, parsedBody: unknown, authInfo: AuthInfo, caller: Caller, extraHeaders: Record<string, string>): Promise<Response> {
    const wantsStream =
      typeof parsedBody === 'object' && parsedBody !== null && !Array.isArray(parsedBody) &&
      (parsedBody as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken !== undefined;
    const server = this.#factory.create(caller);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsStream });
    await server.connect(transport);
    const close = () =>
      setImmediate(() => {
        void transport.close().catch(() => {});
        void server.close().catch(() => {});
      });
    let res: Response;
    try {
      res = await transport.handleRequest(req, parsedBody === undefined ? { authInfo } : { parsedBody, authInfo });
    } catch (err) {
      close();
      throw err;
    }
    const headers = new Headers(res.headers);
    for (const [k, v] of Object.entries(extraHeaders)) headers.set(k, v);
    if (!res.body || !(res.headers.get('content-type') ?? '').includes('text/event-stream')) {
      close();
      return Object.keys(extraHeaders).length === 0 ? res : new Response(res.body, { status: res.status, statusText: res.statusText, headers });
    }
    // SSE: release the server only when the stream has been read to its end. The guard runs
    // before the stream's first byte, so its headers are already collected here.
    const passthrough = new TransformStream<Uint8Array, Uint8Array>({ flush: () => void close() });
    return new Response(res.body.pipeThrough(passthrough), { status: res.status, headers });
  }
}
