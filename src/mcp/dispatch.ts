/**
 * Our own JSON-RPC dispatch for MCP: both protocol eras, for single well-formed requests, on
 * HTTP and stdio. No SDK import here (the SDK lives in ./server.ts): this is the hot path, and
 * measured, the SDK's per-request machinery cost 3–30× the work itself (docs/mcp-2026-07-28.md).
 *
 * - Modern (2026-07-28): a request whose `params._meta` carries
 *   `io.modelcontextprotocol/protocolVersion`. Stateless; the whole validation ladder of the spec
 *   (envelope → header/body version → supported version → method registry → params → standard
 *   headers), `server/discover`, `tools/list`, `tools/call`, `subscriptions/listen`.
 * - Legacy (2025-11-25 and older): only `tools/list` and `tools/call` of a known tool without a
 *   progress token are answered here, byte for byte what the SDK answers; everything else
 *   (initialize, ping, batches, notifications, malformed params, progress) goes to the SDK.
 *
 * Every tool call goes through the one call path (`CallPath.call`).
 */
import type { CallHeaders, CallOutcome, CallPath } from '../core/call.js';
import type { TaskManager } from '../core/tasks/index.js';
import type { ToolError } from '../errors.js';
import { toolSchemas } from '../json-schema.js';
import { restBindings, type AnyTool, type Caller, type Registry } from '../registry.js';
import { SERVER_INFO } from '../version.js';
import { limiterSpeaksFor } from './admission.js';
import { declaresTasks, McpTasks, TASK_METHODS, TASKS_EXTENSION } from './tasks.js';

export { SERVER_INFO };

/** The revisions served statelessly with the `_meta` envelope. */
export const MODERN_VERSIONS: readonly string[] = ['2026-07-28'];

/** Methods that exist only in the modern era (an envelope-less request for one is a malformed modern request). */
const MODERN_ONLY_METHODS = new Set(['server/discover', 'subscriptions/listen']);
/** Methods the modern era serves; anything else is 404 -32601 (ping, logging/setLevel, initialize, prompts/*, resources/* …). */
const MODERN_METHODS = new Set(['server/discover', 'tools/list', 'tools/call', 'subscriptions/listen']);

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

/** The tool list never changes while the process runs: clients may cache it for a day, shared. */
export const LIST_TTL_MS = 86_400_000;

/** JSON-RPC error codes we emit (spec names). */
export const RPC = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const;

type Id = string | number;
type Json = Record<string, unknown>;

/** One answer: the JSON-RPC message text, its HTTP status (ignored on stdio) and extra headers. */
export interface Reply {
  status: number;
  /** A Buffer for the large pre-serialised answers (tools/list, discover): encoded once, not per request. */
  body: string | Buffer;
  headers?: CallHeaders;
}

/** Request headers of an HTTP exchange (lower-case names); absent on stdio. */
export type HeaderLookup = (name: string) => string | null;

/** Where notifications of a running request go (its SSE stream, or stdout). */
export type Emit = (message: string) => void;

export interface DispatchOptions {
  registry: Registry;
  calls: CallPath;
  /** The task manager, where the Tasks extension is served. */
  tasks?: TaskManager | undefined;
  /** The legacy revisions (the SDK's list): advertised in discover and -32022, accepted in the header. */
  legacyVersions: readonly string[];
}

/** The MCP `Tool` listing of a registry (same for both eras). */
export function listing(registry: Registry): Json[] {
  return registry.tools.map((t) => {
    const s = toolSchemas(t);
    return {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: s.input,
      outputSchema: s.output,
      annotations: { title: t.title, ...t.annotations },
    };
  });
}

/** MCP error result in the contract's shape: one text block, no structuredContent. */
export function errorResult(err: ToolError): { isError: true; content: Array<{ type: 'text'; text: string }> } {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: err.toJSON() }) }] };
}

/** The CallToolResult of a call outcome, as JSON text (`prefix` goes first, e.g. `"resultType":"complete",`). */
function callResultJson(out: CallOutcome, prefix: string, suffix: string): string {
  if (!out.ok) return `{${prefix}${JSON.stringify(errorResult(out.error)).slice(1, -1)}${suffix}}`;
  const r = out.value;
  const text = JSON.stringify(r.json);
  let extra = '';
  if (r.content) for (const c of r.content) extra += `${JSON.stringify(c)},`;
  return `{${prefix}"content":[${extra}{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}${suffix}}`;
}

export function rpcError(id: Id | null, code: number, message: string, data?: unknown): string {
  const error = data === undefined ? { code, message } : { code, message, data };
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Decodes an `=?base64?…?=` header value (spec: streamable-http, header value encoding); undefined when malformed. */
export function decodeMcpHeader(v: string | null): string | null | undefined {
  if (v === null || !(v.startsWith('=?base64?') && v.endsWith('?='))) return v;
  const b = v.slice(9, -2);
  if (b.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b)) return undefined;
  return Buffer.from(b, 'base64').toString('utf8');
}

/** Whether a parsed JSON-RPC message is modern-era: it carries the `_meta` protocol version. */
export function hasEnvelope(msg: unknown): boolean {
  if (!isObject(msg)) return false;
  const p = msg.params;
  if (!isObject(p)) return false;
  const m = p._meta;
  return isObject(m) && META_PROTOCOL_VERSION in m;
}

/** A request id as JSON-RPC allows it, or null when it cannot be read. */
function idOf(msg: unknown): Id | null {
  if (!isObject(msg)) return null;
  const id = msg.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** A streamed call's limit headers, known once it is admitted or refused (then `admitted` is told). */
interface HeaderBox {
  headers?: CallHeaders;
  admitted?: () => void;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' };
const encoder = new TextEncoder();

export type HttpAnswer =
  | { kind: 'reply'; reply: Reply }
  | { kind: 'stream'; status: number; headers: Record<string, string>; body: ReadableStream<Uint8Array> }
  | { kind: 'accepted' }
  /** Not ours: the SDK answers (legacy initialize, ping, batches, notifications, odd requests). */
  | { kind: 'sdk' };

export class Dispatcher {
  readonly #registry: Registry;
  readonly #calls: CallPath;
  readonly #legacyVersions: ReadonlySet<string>;
  readonly #supported: string[];
  readonly #serverInfo: { readonly name: string; readonly version: string };
  readonly #metaJson: string;
  readonly #legacyList: Buffer;
  readonly #modernList: Buffer;
  readonly #discover: Buffer;
  readonly #largeBody: ReadonlySet<string>;
  /** The Tasks extension (./tasks.ts), when the call path serves tasks. */
  readonly #tasks: McpTasks | undefined;

  constructor(opts: DispatchOptions) {
    this.#registry = opts.registry;
    this.#calls = opts.calls;
    this.#legacyVersions = new Set(opts.legacyVersions);
    this.#supported = [...MODERN_VERSIONS, ...opts.legacyVersions];
    this.#serverInfo = SERVER_INFO;
    const meta = { [META_SERVER_INFO]: this.#serverInfo };
    this.#metaJson = JSON.stringify(meta);
    const taskManager = opts.tasks;
    this.#tasks = taskManager && new McpTasks(taskManager, this.#metaJson, { invalidParams: RPC.InvalidParams, missingCapability: RPC.MissingRequiredClientCapability, invalidRequest: RPC.InvalidRequest });
    const tools = listing(opts.registry);
    // Pre-serialised: the list is static for the life of the process.
    // Pre-serialised and pre-encoded (`{"result":…`): the list is static for the life of the
    // process, and encoding its 50 KB (non-ASCII) string per request cost ≈ 70 µs.
    const head = (result: unknown) => Buffer.from(`{"result":${JSON.stringify(result)}`);
    this.#legacyList = head({ tools });
    this.#modernList = head({ resultType: 'complete', tools, ttlMs: LIST_TTL_MS, cacheScope: 'public', _meta: meta });
    this.#discover = head({
      resultType: 'complete',
      supportedVersions: this.#supported,
      capabilities: this.#tasks ? { tools: { listChanged: false }, extensions: { [TASKS_EXTENSION]: {} } } : { tools: { listChanged: false } },
      instructions: opts.registry.instructions,
      ttlMs: LIST_TTL_MS,
      cacheScope: 'public',
      _meta: meta,
    });
    this.#largeBody = new Set(opts.registry.tools.filter((t) => restBindings(t).some((b) => b.bodyLimit === 'large')).map((t) => t.name));
  }

  get supportedVersions(): readonly string[] {
    return this.#supported;
  }

  /** Whether a tool takes the large body limit (its REST binding says so): the same limit applies on /mcp. */
  takesLargeBody(toolName: unknown): boolean {
    return typeof toolName === 'string' && this.#largeBody.has(toolName);
  }

  get anyLargeBody(): boolean {
    return this.#largeBody.size > 0;
  }

  // ─── HTTP ────────────────────────────────────────────────────────────────────────────────

  /**
   * One POST /mcp with a JSON body that parsed. `fast`: the request also meets what the SDK's
   * transport checks for a legacy request (Accept, Content-Type), so a legacy call may be served here.
   */
  http(msg: unknown, header: HeaderLookup, caller: Caller, signal: () => AbortSignal, fast: boolean): HttpAnswer | Promise<HttpAnswer> {
    const hpv = header('mcp-protocol-version');
    const headerModern = hpv !== null && MODERN_VERSIONS.includes(hpv);
    if (!isObject(msg)) {
      // Batches and non-objects: the SDK's legacy transport answers them, unless the client speaks 2026-07-28.
      if (!headerModern) return hpv === null || this.#legacyVersions.has(hpv) ? SDK : this.#unsupportedHeader(null, hpv);
      const text = Array.isArray(msg) ? 'Invalid Request: batches are not supported in 2026-07-28' : 'Invalid Request';
      return reply(400, rpcError(null, RPC.InvalidRequest, text));
    }
    const method = msg.method;
    const modern = hasEnvelope(msg) || headerModern || (typeof method === 'string' && MODERN_ONLY_METHODS.has(method));
    if (!modern) {
      if (hpv !== null && !this.#legacyVersions.has(hpv)) return this.#unsupportedHeader(idOf(msg), hpv);
      if (!fast) return SDK;
      return this.#legacyFast(msg, caller, signal) ?? SDK;
    }
    return this.#modernHttp(msg, header, hpv, caller);
  }

  /** An MCP-Protocol-Version header naming a revision we do not serve (no modern body). */
  #unsupportedHeader(id: Id | null, hpv: string): HttpAnswer {
    return reply(400, rpcError(id, RPC.UnsupportedProtocolVersion, 'Unsupported protocol version', { supported: this.#supported, requested: hpv }));
  }

  #modernHttp(msg: Json, header: HeaderLookup, hpv: string | null, caller: Caller): HttpAnswer | Promise<HttpAnswer> {
    const shape = this.#shape(msg);
    if (shape !== undefined) return shape;
    const id = msg.id as Id | undefined;
    const method = msg.method as string;
    if (id === undefined) return ACCEPTED; // a notification: nothing to answer on HTTP
    const env = this.#envelope(id, msg.params);
    if (typeof env !== 'string') return { kind: 'reply', reply: env };
    const pv = env;
    if (hpv === null) return reply(400, rpcError(id, RPC.HeaderMismatch, 'Header mismatch: the MCP-Protocol-Version header is required'));
    if (hpv !== pv) {
      // Liberal (documented): a legacy revision in the header of a request whose body is a
      // supported modern one (a hosted client is known to send it). The body decides the era.
      const tolerated = this.#legacyVersions.has(hpv) && MODERN_VERSIONS.includes(pv);
      if (!tolerated) return reply(400, rpcError(id, RPC.HeaderMismatch, `Header mismatch: MCP-Protocol-Version header '${hpv}' does not match the body's '${pv}'`));
    }
    if (!MODERN_VERSIONS.includes(pv)) return reply(400, rpcError(id, RPC.UnsupportedProtocolVersion, 'Unsupported protocol version', { supported: this.#supported, requested: pv }));
    if (!this.#serves(method)) return reply(404, rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`));
    const params = msg.params as Json;
    const bad = this.#params(id, method, params);
    if (bad) return { kind: 'reply', reply: bad };
    const hm = decodeMcpHeader(header('mcp-method'));
    if (hm !== method) {
      return reply(400, rpcError(id, RPC.HeaderMismatch, hm === null ? 'Header mismatch: the Mcp-Method header is required' : `Header mismatch: Mcp-Method header does not match the body's method '${method}'`));
    }
    if (method === 'tools/call') {
      const hn = decodeMcpHeader(header('mcp-name'));
      if (hn !== params.name) {
        return reply(400, rpcError(id, RPC.HeaderMismatch, hn === null ? 'Header mismatch: the Mcp-Name header is required' : `Header mismatch: Mcp-Name header does not match the body's params.name`));
      }
    }
    // Tasks extension: Mcp-Name carries the task id; then the client-capability rung (-32021).
    if (TASK_METHODS.has(method)) {
      const hn = decodeMcpHeader(header('mcp-name'));
      if (hn !== params.taskId) {
        return reply(400, rpcError(id, RPC.HeaderMismatch, hn === null ? 'Header mismatch: the Mcp-Name header is required' : `Header mismatch: Mcp-Name header does not match the body's params.taskId`));
      }
    }
    const missing = this.#capabilities(id, method, params);
    if (missing) return { kind: 'reply', reply: missing };
    if (method === 'subscriptions/listen' || (method === 'tools/call' && (params._meta as Json).progressToken !== undefined && !this.#taskCall(params))) {
      return this.#stream(id, method, params, caller);
    }
    const r = this.#modernRun(id, method, params, caller, undefined, undefined);
    return r instanceof Promise ? r.then(asReply) : asReply(r);
  }

  /**
   * A modern request answered on its own SSE stream: progress notifications, then the response.
   * The response's headers carry the call's limit headers, so they wait for the limiter's answer:
   * at once from the embedded limiter, one round trip later from the shared (Redis) one.
   */
  #stream(id: Id, method: string, params: Json, caller: Caller): HttpAnswer | Promise<HttpAnswer> {
    const abort = new AbortController();
    let ctrl!: ReadableStreamDefaultController<Uint8Array>;
    let open = true;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => void (ctrl = c),
      cancel: () => {
        open = false;
        abort.abort(new Error('The client closed the stream'));
      },
    });
    const emit: Emit = (m) => {
      if (open) ctrl.enqueue(encoder.encode(`event: message\ndata: ${m}\n\n`));
    };
    const box: HeaderBox = {};
    const run = this.#modernRun(id, method, params, caller, emit, abort.signal, box);
    void Promise.resolve(run).then(
      (r) => {
        emit(String(r.body));
        if (open) ctrl.close();
      },
      () => {
        if (open) ctrl.close();
      },
    );
    const answer = (): HttpAnswer => ({ kind: 'stream', status: 200, headers: box.headers ? { ...SSE_HEADERS, ...box.headers } : SSE_HEADERS, body });
    if (box.headers !== undefined || !(run instanceof Promise) || !limiterSpeaksFor(this.#calls, caller)) return answer();
    // Admission pending: every admission or refusal reports headers; a call that fails without
    // any (the limiter unreachable) has ended, and the stream already holds its answer.
    return new Promise<HttpAnswer>((resolve) => {
      const done = () => resolve(answer());
      box.admitted = done;
      run.then(done, done);
    });
  }

  // ─── stdio ───────────────────────────────────────────────────────────────────────────────

  /** Whether a stdio message is ours (modern era); legacy messages go to the SDK's server. */
  isModern(msg: unknown): boolean {
    return hasEnvelope(msg) || (isObject(msg) && typeof msg.method === 'string' && MODERN_ONLY_METHODS.has(msg.method));
  }

  /**
   * One modern request over stdio: the same ladder without the header rungs. Notifications
   * (progress, the listen acknowledgement) go to `emit` before the response, which is returned.
   * Undefined for a notification (no answer).
   */
  async stdio(msg: Json, caller: Caller, emit: Emit, signal: AbortSignal): Promise<string | undefined> {
    const shape = this.#shape(msg);
    if (shape !== undefined) return shape.kind === 'reply' ? String(shape.reply.body) : undefined;
    const id = msg.id as Id | undefined;
    if (id === undefined) return undefined;
    const method = msg.method as string;
    const env = this.#envelope(id, msg.params);
    if (typeof env !== 'string') return String(env.body);
    if (!MODERN_VERSIONS.includes(env)) return rpcError(id, RPC.UnsupportedProtocolVersion, 'Unsupported protocol version', { supported: this.#supported, requested: env });
    if (!this.#serves(method)) return rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`);
    const params = msg.params as Json;
    const bad = this.#params(id, method, params) ?? this.#capabilities(id, method, params);
    if (bad) return String(bad.body);
    return String((await this.#modernRun(id, method, params, caller, emit, signal)).body);
  }

  // ─── shared rungs ────────────────────────────────────────────────────────────────────────

  /** JSON-RPC shape: a request or notification with a string method; ids are strings or numbers. */
  #shape(msg: Json): HttpAnswer | undefined {
    if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string' || ('id' in msg && typeof msg.id !== 'string' && typeof msg.id !== 'number')) {
      return reply(400, rpcError(idOf(msg), RPC.InvalidRequest, 'Invalid Request: expected a JSON-RPC 2.0 request or notification'));
    }
    return undefined;
  }

  /** The `_meta` envelope: the protocol version it names, or the -32602 answer. */
  #envelope(id: Id, params: unknown): string | Reply {
    const meta = isObject(params) ? params._meta : undefined;
    if (!isObject(meta)) return missing('params._meta is required (protocol version and client capabilities)');
    const pv = meta[META_PROTOCOL_VERSION];
    if (typeof pv !== 'string') return missing(`_meta["${META_PROTOCOL_VERSION}"] must be a string`);
    if (!isObject(meta[META_CLIENT_CAPABILITIES])) return missing(`_meta["${META_CLIENT_CAPABILITIES}"] is required (an object; {} for none)`);
    const info = meta[META_CLIENT_INFO];
    if (info !== undefined && !isObject(info)) return missing(`_meta["${META_CLIENT_INFO}"] must be an object`);
    return pv;
    function missing(what: string): Reply {
      return { status: 400, body: rpcError(id, RPC.InvalidParams, `Invalid params: ${what}`) };
    }
  }

  /** Params of the modern methods (-32602, in-band). */
  #params(id: Id, method: string, params: Json): Reply | undefined {
    if (method === 'tools/call') {
      if (typeof params.name !== 'string') return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.name must be a string') };
      if (params.arguments !== undefined && !isObject(params.arguments)) {
        return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.arguments must be an object') };
      }
      if (!this.#registry.get(params.name)) return { status: 200, body: rpcError(id, RPC.InvalidParams, `Unknown tool: ${params.name}`) };
    } else if (method === 'subscriptions/listen') {
      if (!isObject(params.notifications)) return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.notifications must be an object') };
    } else if (this.#tasks && TASK_METHODS.has(method)) {
      return this.#tasks.params(id, method, params);
    }
    return undefined;
  }

  /** Whether the modern era serves a method (the Tasks extension's when tasks are served). */
  #serves(method: string): boolean {
    return MODERN_METHODS.has(method) || (this.#tasks !== undefined && TASK_METHODS.has(method));
  }

  /** The client-capability rung: tasks/* (and a listen for task notifications) need the Tasks extension declared on the request (-32021). */
  #capabilities(id: Id, method: string, params: Json): Reply | undefined {
    if (!this.#tasks) return undefined;
    if (TASK_METHODS.has(method)) return this.#tasks.capability(id, params);
    if (method === 'subscriptions/listen' && (params.notifications as Json).taskIds !== undefined && !declaresTasks(params)) return this.#tasks.capability(id, params);
    return undefined;
  }

  /** Whether a (checked) tools/call is answered with a task: the request declared the extension and the tool may run long. */
  #taskCall(params: Json): boolean {
    return this.#tasks !== undefined && this.#tasks.wantsTask(params, this.#registry.get(params.name as string)!);
  }

  /** A modern tools/call answer for an outcome. */
  #callReply(idJson: string, out: CallOutcome): Reply {
    return {
      status: 200,
      body: `{"jsonrpc":"2.0","id":${idJson},"result":${callResultJson(out, '"resultType":"complete",', `,"_meta":${this.#metaJson}`)}}`,
      headers: out.headers,
    };
  }

  /** Runs a checked modern request. `box` learns a tool call's headers when it is admitted or refused. */
  #modernRun(id: Id, method: string, params: Json, caller: Caller, emit: Emit | undefined, signal: AbortSignal | undefined, box?: HeaderBox): Reply | Promise<Reply> {
    const idJson = JSON.stringify(id);
    switch (method) {
      case 'tools/call': {
        const tool = this.#registry.get(params.name as string)!;
        // Tasks extension (./tasks.ts): a declared client calling a long-running tool gets a task.
        if (this.#tasks && this.#taskCall(params)) return this.#tasks.call(id, caller, tool, params.arguments ?? {}, (out) => this.#callReply(idJson, out));
        const token = (params._meta as Json).progressToken;
        const progress = token !== undefined && emit ? progressTo(emit, token) : undefined;
        const out = this.#call(caller, tool, params.arguments ?? {}, signal ?? (() => NEVER), progress, box);
        return out instanceof Promise ? out.then((o) => this.#callReply(idJson, o)) : this.#callReply(idJson, out);
      }
      case 'tools/list':
        return { status: 200, body: withId(this.#modernList, idJson) };
      case 'server/discover':
        return { status: 200, body: withId(this.#discover, idJson) };
      case 'subscriptions/listen': {
        // Our lists never change: acknowledge with an empty filter (nothing will be delivered),
        // then end the subscription gracefully at once (spec: subscriptions; docs/mcp-2026-07-28.md §1.7).
        const sub = { [META_SUBSCRIPTION_ID]: id };
        emit?.(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: {}, _meta: sub } }));
        return {
          status: 200,
          body: JSON.stringify({ jsonrpc: '2.0', id, result: { resultType: 'complete', _meta: { ...sub, [META_SERVER_INFO]: this.#serverInfo } } }),
        };
      }
      case 'tasks/get':
      case 'tasks/update':
      case 'tasks/cancel':
        if (this.#tasks) return this.#tasks.run(id, method, params, caller);
        return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`) };
      default:
        return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`) };
    }
  }

  #call(
    caller: Caller,
    tool: AnyTool,
    input: unknown,
    signal: AbortSignal | (() => AbortSignal),
    progress: ((p: number, t?: number, m?: string) => Promise<void>) | undefined,
    box: HeaderBox | undefined,
  ): CallOutcome | Promise<CallOutcome> {
    return this.#calls.invoke(caller, tool, input, {
      signal,
      progress,
      onHeaders: box
        ? (h) => {
            box.headers = h;
            box.admitted?.();
          }
        : undefined,
    });
  }

  /**
   * Legacy tools/list and tools/call, the answers the SDK would give, without it. Undefined:
   * not a request this path takes (the SDK answers it, including every error).
   */
  #legacyFast(msg: Json, caller: Caller, signal: () => AbortSignal): HttpAnswer | Promise<HttpAnswer> | undefined {
    const id = msg.id;
    if (msg.jsonrpc !== '2.0' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
    const params = msg.params;
    if (params !== undefined && !isObject(params)) return undefined;
    const meta = params?._meta;
    if (meta !== undefined && (!isObject(meta) || meta.progressToken !== undefined)) return undefined;
    if (msg.method === 'tools/list') {
      if (params?.cursor !== undefined && typeof params.cursor !== 'string') return undefined;
      return reply(200, withId(this.#legacyList, JSON.stringify(id)));
    }
    if (msg.method !== 'tools/call' || !params || typeof params.name !== 'string') return undefined;
    const args = params.arguments;
    if (args !== undefined && !isObject(args)) return undefined;
    if ('task' in params) return undefined;
    const tool = this.#registry.get(params.name);
    if (!tool) return undefined;
    const answer = (out: CallOutcome) => reply(200, `{"result":${callResultJson(out, '', '')},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`, out.headers);
    const out = this.#call(caller, tool, args ?? {}, signal, undefined, undefined);
    return out instanceof Promise ? out.then(answer) : answer(out);
  }
}

const SDK: HttpAnswer = { kind: 'sdk' };
const asReply = (r: Reply): HttpAnswer => ({ kind: 'reply', reply: r });
const ACCEPTED: HttpAnswer = { kind: 'accepted' };
const NEVER = new AbortController().signal;

/** `{"result":…` + `,"jsonrpc":"2.0","id":…}` (the SDK's member order). */
function withId(head: Buffer, idJson: string): Buffer {
  return Buffer.concat([head, Buffer.from(`,"jsonrpc":"2.0","id":${idJson}}`)]);
}

function reply(status: number, body: string | Buffer, headers?: CallHeaders): HttpAnswer {
  return { kind: 'reply', reply: headers ? { status, body, headers } : { status, body } };
}

function progressTo(emit: Emit, token: unknown): (progress: number, total?: number, message?: string) => Promise<void> {
  return async (progress, total, message) => {
    const params: Json = { progressToken: token, progress };
    if (total !== undefined) params.total = total;
    if (message) params.message = message;
    try {
      emit(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params }));
    } catch {
      // A client that went away does not fail the call.
    }
  };
}
