/**
 * Our own JSON-RPC dispatch for MCP: both protocol eras, for single well-formed requests, on
 * HTTP and stdio. No SDK import here (the SDK lives in ./server.ts): this is the hot path, and
 * measured, the SDK's per-request machinery cost 3–30× the work itself (docs/mcp-2026-07-28.md).
 *
 * - Modern (2026-07-28): a request whose `params._meta` carries
 *   `io.modelcontextprotocol/protocolVersion`. Stateless; checked by the spec's validation ladder
 *   (./modern-ladder.ts), then run here: `server/discover`, `tools/list`, `tools/call`,
 *   `subscriptions/listen` (on its own SSE stream, ./sse-stream.ts), the Tasks extension.
 * - Legacy (2025-11-25 and older): only `tools/list` and `tools/call` of a known tool without a
 *   progress token are answered here (./legacy-fast-path.ts); everything else (initialize, ping,
 *   batches, notifications, malformed params, progress) goes to the SDK.
 *
 * The wire vocabulary is ./wire.ts; the JSON of answers ./answers.ts. Every tool call goes
 * through the one call path (`CallPath.invoke`).
 */
import type { CallOutcome, CallPath } from '../core/call.js';
import type { TaskManager } from '../core/tasks/index.js';
import type { AnyTool, Caller, Registry } from '../registry.js';
import { SERVER_INFO } from '../version.js';
import { limiterSpeaksFor } from './admission.js';
import { ACCEPTED, asReply, callResultJson, implementation, listing, reply, resultHead, SDK, withId, type HttpAnswer, type Reply } from './answers.js';
import { LegacyFastPath } from './legacy-fast-path.js';
import { ModernLadder, NOTIFICATION } from './modern-ladder.js';
import { declaresUi, notFoundMessage, UI_EXTENSION, ViewResources } from './resources.js';
import { SESSION_NOT_FOUND, type SessionState } from './session.js';
import { streamAnswer, type HeaderBox } from './sse-stream.js';
import { McpTasks, TASKS_EXTENSION } from './tasks.js';
import {
  hasEnvelope,
  idOf,
  isObject,
  LIST_TTL_MS,
  META_CLIENT_CAPABILITIES,
  META_SERVER_INFO,
  META_SUBSCRIPTION_ID,
  MODERN_ONLY_METHODS,
  MODERN_VERSIONS,
  progressTo,
  RPC,
  rpcError,
  stampRequestId,
  type Emit,
  type HeaderLookup,
  type Id,
  type Json,
} from './wire.js';

export interface DispatchOptions {
  registry: Registry;
  calls: CallPath;
  /** The task manager, where the Tasks extension is served. */
  tasks?: TaskManager | undefined;
  /** The legacy revisions (the SDK's list): advertised in discover and -32022, accepted in the header. */
  legacyVersions: readonly string[];
  /** Where this server serves /icons/ (its PUBLIC_BASE_URL): tools/list and discover name the icons. Absent on stdio. */
  iconBaseUrl?: string | undefined;
  /**
   * The cache scope of tools/list and server/discover: `public` (the default, one list for every
   * caller) or `private` for a client's own toolset selection (./toolsets.ts), which may have been
   * chosen by a header a shared cache does not key on.
   */
  cacheScope?: 'public' | 'private' | undefined;
  /** The MCP Apps views served (./resources.ts); by default those the registry's tools name, as built. */
  views?: ViewResources | undefined;
}

/** The answers only a modern request that declares MCP Apps gets (./resources.ts). */
interface AppsAnswers {
  list: Buffer;
  discover: Buffer;
  resources: Buffer;
  reads: ReadonlyMap<string, Buffer>;
}

export class Dispatcher {
  readonly #registry: Registry;
  readonly #calls: CallPath;
  readonly #legacyVersions: ReadonlySet<string>;
  readonly #supported: string[];
  readonly #serverInfo: { readonly name: string; readonly version: string };
  readonly #metaJson: string;
  readonly #modernList: Buffer;
  readonly #discover: Buffer;
  readonly #apps: AppsAnswers | undefined;
  /** The Tasks extension (./tasks.ts), when the call path serves tasks. */
  readonly #tasks: McpTasks | undefined;
  readonly #ladder: ModernLadder;
  readonly #legacy: LegacyFastPath;

  constructor(opts: DispatchOptions) {
    this.#registry = opts.registry;
    this.#calls = opts.calls;
    this.#legacyVersions = new Set(opts.legacyVersions);
    this.#supported = [...MODERN_VERSIONS, ...opts.legacyVersions];
    this.#serverInfo = SERVER_INFO;
    const meta = { [META_SERVER_INFO]: this.#serverInfo };
    this.#metaJson = JSON.stringify(meta);
    const taskManager = opts.tasks;
    this.#tasks = taskManager && new McpTasks(taskManager, this.#metaJson);
    const views = opts.views ?? new ViewResources(opts.registry);
    this.#ladder = new ModernLadder(opts.registry, this.#tasks, this.#legacyVersions, this.#supported, views.size > 0);
    const tools = listing(opts.registry, opts.iconBaseUrl);
    const cacheScope = opts.cacheScope ?? 'public';
    // Legacy HTTP: the tools name their views only for a session that declared MCP Apps in its
    // initialize (./session.ts; docs/apps.md).
    const legacyList = resultHead({ tools });
    this.#legacy = new LegacyFastPath(opts.registry, opts.calls, legacyList, views.size > 0 ? resultHead({ tools: listing(opts.registry, opts.iconBaseUrl, views) }) : legacyList);
    const list = (t: unknown) => resultHead({ resultType: 'complete', tools: t, ttlMs: LIST_TTL_MS, cacheScope, _meta: meta });
    this.#modernList = list(tools);
    const extensions = this.#tasks ? { [TASKS_EXTENSION]: {} } : undefined;
    const discover = (capabilities: unknown) =>
      resultHead({
        resultType: 'complete',
        supportedVersions: this.#supported,
        capabilities,
        instructions: opts.registry.instructions,
        ttlMs: LIST_TTL_MS,
        cacheScope,
        _meta: { [META_SERVER_INFO]: implementation(opts.iconBaseUrl) },
      });
    this.#discover = discover(extensions ? { tools: { listChanged: false }, extensions } : { tools: { listChanged: false } });
    if (views.size === 0) return;
    const cached = (result: object) => resultHead({ resultType: 'complete', ...result, ttlMs: LIST_TTL_MS, cacheScope, _meta: meta });
    this.#apps = {
      list: list(listing(opts.registry, opts.iconBaseUrl, views)),
      discover: discover({ tools: { listChanged: false }, resources: { listChanged: false }, extensions: { ...extensions, [UI_EXTENSION]: {} } }),
      resources: cached({ resources: views.list }),
      reads: new Map(views.list.map((r) => [r.uri, readHead(r.uri, cacheScope, () => cached(views.read(r.uri)!))])),
    };
  }

  /** The MCP Apps answers, when the (checked) modern request declares the extension and views are served. */
  #appsFor(params: Json): AppsAnswers | undefined {
    return this.#apps && declaresUi((params._meta as Json)[META_CLIENT_CAPABILITIES]) ? this.#apps : undefined;
  }

  get supportedVersions(): readonly string[] {
    return this.#supported;
  }

  // ─── HTTP ────────────────────────────────────────────────────────────────────────────────

  /**
   * Whether the answer to this (legacy) request opens an MCP Apps session: an initialize that
   * declares the extension, when views are served (./session.ts issues the id).
   */
  opensUiSession(msg: unknown): boolean {
    return this.#apps !== undefined && isObject(msg) && msg.method === 'initialize' && isObject(msg.params) && declaresUi(msg.params.capabilities);
  }

  /**
   * One POST /mcp with a JSON body that parsed. `fast`: the request also meets what the SDK's
   * transport checks for a legacy request (Accept, Content-Type), so a legacy call may be served here.
   * `session`: what its Mcp-Session-Id says (legacy era only; ./session.ts). `requestId`: the
   * answer's X-Request-Id, which every error of ours names (`error.data.request_id`, and a failed
   * tool call's error object).
   */
  http(msg: unknown, header: HeaderLookup, caller: Caller, signal: () => AbortSignal, fast: boolean, session: SessionState = 'none', requestId?: string): HttpAnswer | Promise<HttpAnswer> {
    const hpv = header('mcp-protocol-version');
    const headerModern = hpv !== null && MODERN_VERSIONS.includes(hpv);
    if (!isObject(msg)) {
      // Batches and non-objects: the SDK's legacy transport answers them, unless the client speaks 2026-07-28.
      if (!headerModern && session === 'unknown') return sessionNotFound(null, requestId);
      if (!headerModern) return hpv === null || this.#legacyVersions.has(hpv) ? SDK : asReply(stamped(this.#ladder.unsupported(null, hpv), requestId));
      const text = Array.isArray(msg) ? 'Invalid Request: batches are not supported in 2026-07-28' : 'Invalid Request';
      return reply(400, rpcError(null, RPC.InvalidRequest, text, undefined, requestId));
    }
    const method = msg.method;
    const modern = hasEnvelope(msg) || headerModern || (typeof method === 'string' && MODERN_ONLY_METHODS.has(method));
    if (!modern) {
      // An MCP-Protocol-Version header naming a revision we do not serve (no modern body).
      if (hpv !== null && !this.#legacyVersions.has(hpv)) return asReply(stamped(this.#ladder.unsupported(idOf(msg), hpv), requestId));
      // A session we did not issue (or whose key the store lost): 404, and the client initializes
      // again, which is therefore exempt.
      if (session === 'unknown' && msg.method !== 'initialize') return sessionNotFound(idOf(msg), requestId);
      if (!fast) return SDK;
      return this.#legacy.answer(msg, caller, signal, session === 'ui', requestId) ?? SDK;
    }
    return this.#modernHttp(msg, header, hpv, caller, requestId);
  }

  #modernHttp(msg: Json, header: HeaderLookup, hpv: string | null, caller: Caller, requestId: string | undefined): HttpAnswer | Promise<HttpAnswer> {
    const verdict = this.#ladder.http(msg, header, hpv);
    // A rung's answer is always an error: it names the request.
    if (verdict !== undefined) return verdict === NOTIFICATION ? ACCEPTED : asReply(stamped(verdict, requestId));
    const id = msg.id as Id;
    const method = msg.method as string;
    const params = msg.params as Json;
    if (method === 'subscriptions/listen' || (method === 'tools/call' && (params._meta as Json).progressToken !== undefined && !this.#taskCall(params))) {
      return streamAnswer((emit, signal, box) => this.#modernRun(id, method, params, caller, requestId, emit, signal, box), limiterSpeaksFor(this.#calls, caller));
    }
    const r = this.#modernRun(id, method, params, caller, requestId, undefined, undefined);
    return r instanceof Promise ? r.then(asReply) : asReply(r);
  }

  // ─── stdio ───────────────────────────────────────────────────────────────────────────────

  /** Whether a stdio message is ours (modern era); legacy messages go to the SDK's server. */
  isModern(msg: unknown): boolean {
    return hasEnvelope(msg) || (isObject(msg) && typeof msg.method === 'string' && MODERN_ONLY_METHODS.has(msg.method));
  }

  /**
   * One modern request over stdio: the same ladder without the header rungs. Notifications
   * (progress, the listen acknowledgement) go to `emit` before the response, which is returned.
   * Undefined for a notification (no answer). No request id: stdio has no HTTP request (one
   * client, one process; the JSON-RPC id already names the message), so its errors stay as they were.
   */
  async stdio(msg: Json, caller: Caller, emit: Emit, signal: AbortSignal): Promise<string | undefined> {
    const verdict = this.#ladder.stdio(msg);
    if (verdict !== undefined) return verdict === NOTIFICATION ? undefined : String(verdict.body);
    return String((await this.#modernRun(msg.id as Id, msg.method as string, msg.params as Json, caller, undefined, emit, signal)).body);
  }

  // ─── running a checked modern request ────────────────────────────────────────────────────

  /** Whether a (checked) tools/call is answered with a task: the request declared the extension and the tool may run long. */
  #taskCall(params: Json): boolean {
    return this.#tasks !== undefined && this.#tasks.wantsTask(params, this.#registry.get(params.name as string)!);
  }

  /** A modern tools/call answer for an outcome (a failure's error object names `requestId`). */
  #callReply(idJson: string, out: CallOutcome, requestId: string | undefined): Reply {
    return {
      status: 200,
      body: `{"jsonrpc":"2.0","id":${idJson},"result":${callResultJson(out, '"resultType":"complete",', `,"_meta":${this.#metaJson}`, requestId)}}`,
      headers: out.headers,
    };
  }

  /** Runs a checked modern request. `box` learns a tool call's headers when it is admitted or refused. */
  #modernRun(id: Id, method: string, params: Json, caller: Caller, requestId: string | undefined, emit: Emit | undefined, signal: AbortSignal | undefined, box?: HeaderBox): Reply | Promise<Reply> {
    const idJson = JSON.stringify(id);
    switch (method) {
      case 'tools/call': {
        const tool = this.#registry.get(params.name as string)!;
        // Tasks extension (./tasks.ts): a declared client calling a long-running tool gets a task.
        if (this.#tasks && this.#taskCall(params)) return this.#tasks.call(id, caller, tool, params.arguments ?? {}, (out) => this.#callReply(idJson, out, requestId));
        const token = (params._meta as Json).progressToken;
        const progress = token !== undefined && emit ? progressTo(emit, token) : undefined;
        const out = this.#call(caller, tool, params.arguments ?? {}, signal ?? (() => NEVER), progress, box);
        return out instanceof Promise ? out.then((o) => this.#callReply(idJson, o, requestId)) : this.#callReply(idJson, out, requestId);
      }
      case 'tools/list':
        return { status: 200, body: withId(this.#appsFor(params)?.list ?? this.#modernList, idJson) };
      case 'server/discover':
        return { status: 200, body: withId(this.#appsFor(params)?.discover ?? this.#discover, idJson) };
      case 'resources/list':
        // The ladder lets resources/* through only for a request that declares MCP Apps.
        return { status: 200, body: withId(this.#apps!.resources, idJson) };
      case 'resources/read': {
        const uri = params.uri as string;
        const read = this.#apps!.reads.get(uri);
        return read ? { status: 200, body: withId(read, idJson) } : { status: 200, body: rpcError(id, RPC.InvalidParams, notFoundMessage(uri), { uri }, requestId) };
      }
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
        if (this.#tasks) return this.#tasks.run(id, method, params, caller, requestId);
        return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`, undefined, requestId) };
      default:
        return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`, undefined, requestId) };
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
      era: '2026-07-28',
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
}

const NEVER = new AbortController().signal;

/** 404 for a legacy request naming a session we do not know (the transport spec, for an expired session). */
function sessionNotFound(id: Id | null, requestId: string | undefined): HttpAnswer {
  return reply(404, rpcError(id, SESSION_NOT_FOUND.code, SESSION_NOT_FOUND.message, undefined, requestId));
}

/** An error reply built before the request id was known, naming it now. */
function stamped(r: Reply, requestId: string | undefined): Reply {
  return requestId === undefined ? r : { ...r, body: stampRequestId(String(r.body), requestId) };
}

/**
 * The encoded resources/read answers (≈ 400 KB each), shared by every Dispatcher: a toolset
 * selection builds its own Dispatcher (up to 32 are kept), and a copy of each view per
 * selection would cost megabytes. The answer depends only on the URI and the cache scope.
 */
const READ_HEADS = new Map<string, Buffer>();
function readHead(uri: string, cacheScope: string, make: () => Buffer): Buffer {
  const key = `${cacheScope}\0${uri}`;
  let head = READ_HEADS.get(key);
  if (head === undefined) READ_HEADS.set(key, (head = make()));
  return head;
}
