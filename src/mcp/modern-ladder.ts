/**
 * The validation ladder of a 2026-07-28 request (spec: the order in which a server checks a
 * request, docs/mcp-2026-07-28.md §1.5): JSON-RPC shape → notification → `_meta` envelope →
 * MCP-Protocol-Version header → supported version → method → params → Mcp-Method / Mcp-Name
 * headers → client capabilities. Over stdio the same ladder without the header rungs. The first
 * rung a request fails gives its answer; one that passes every rung is run by the dispatcher.
 */
import type { Registry } from '../registry.js';
import type { Reply } from './answers.js';
import { declaresUi } from './resources.js';
import { declaresTasks, TASK_METHODS, type McpTasks } from './tasks.js';
import {
  decodeMcpHeader,
  idOf,
  isObject,
  META_CLIENT_CAPABILITIES,
  META_CLIENT_INFO,
  META_PROTOCOL_VERSION,
  MODERN_METHODS,
  MODERN_VERSIONS,
  RESOURCE_METHODS,
  RPC,
  rpcError,
  type HeaderLookup,
  type Id,
  type Json,
} from './wire.js';

/** The ladder's verdict on a notification: well-formed, nothing to answer. */
export const NOTIFICATION = Symbol('notification');

/** A request's answer when it fails a rung, NOTIFICATION, or undefined: checked, to be run. */
export type Verdict = Reply | typeof NOTIFICATION | undefined;

export class ModernLadder {
  constructor(
    readonly registry: Registry,
    /** The Tasks extension, when served: its methods and params, its capability rung. */
    readonly tasks: McpTasks | undefined,
    readonly legacyVersions: ReadonlySet<string>,
    /** Every revision served, modern first (the -32022 answers list them). */
    readonly supported: readonly string[],
    /** Whether MCP Apps views are served (resources/* for a request that declares the extension). */
    readonly resources = false,
  ) {}

  /** The whole ladder for one POST /mcp; `hpv` is its MCP-Protocol-Version header. */
  http(msg: Json, header: HeaderLookup, hpv: string | null): Verdict {
    const shape = this.#shape(msg);
    if (shape !== undefined) return shape;
    const id = msg.id as Id | undefined;
    const method = msg.method as string;
    if (id === undefined) return NOTIFICATION; // nothing to answer on HTTP
    const env = this.#envelope(id, msg.params);
    if (typeof env !== 'string') return env;
    const pv = env;
    if (hpv === null) return mismatch(id, 'Header mismatch: the MCP-Protocol-Version header is required');
    if (hpv !== pv) {
      // Liberal (documented): a legacy revision in the header of a request whose body is a
      // supported modern one (a hosted client is known to send it). The body decides the era.
      const tolerated = this.legacyVersions.has(hpv) && MODERN_VERSIONS.includes(pv);
      if (!tolerated) return mismatch(id, `Header mismatch: MCP-Protocol-Version header '${hpv}' does not match the body's '${pv}'`);
    }
    if (!MODERN_VERSIONS.includes(pv)) return this.unsupported(id, pv);
    const params = msg.params as Json;
    if (!this.#serves(method, params)) return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`) };
    const bad = this.#params(id, method, params);
    if (bad) return bad;
    const hm = decodeMcpHeader(header('mcp-method'));
    if (hm !== method) {
      return mismatch(id, hm === null ? 'Header mismatch: the Mcp-Method header is required' : `Header mismatch: Mcp-Method header does not match the body's method '${method}'`);
    }
    if (method === 'tools/call') {
      const hn = decodeMcpHeader(header('mcp-name'));
      if (hn !== params.name) {
        return mismatch(id, hn === null ? 'Header mismatch: the Mcp-Name header is required' : `Header mismatch: Mcp-Name header does not match the body's params.name`);
      }
    }
    if (method === 'resources/read') {
      const hn = decodeMcpHeader(header('mcp-name'));
      if (hn !== params.uri) {
        return mismatch(id, hn === null ? 'Header mismatch: the Mcp-Name header is required' : `Header mismatch: Mcp-Name header does not match the body's params.uri`);
      }
    }
    // Tasks extension: Mcp-Name carries the task id; then the client-capability rung (-32021).
    if (TASK_METHODS.has(method)) {
      const hn = decodeMcpHeader(header('mcp-name'));
      if (hn !== params.taskId) {
        return mismatch(id, hn === null ? 'Header mismatch: the Mcp-Name header is required' : `Header mismatch: Mcp-Name header does not match the body's params.taskId`);
      }
    }
    return this.#capabilities(id, method, params);
  }

  /** The ladder for one message on stdio: no header rungs. */
  stdio(msg: Json): Verdict {
    const shape = this.#shape(msg);
    if (shape !== undefined) return shape;
    const id = msg.id as Id | undefined;
    if (id === undefined) return NOTIFICATION;
    const method = msg.method as string;
    const env = this.#envelope(id, msg.params);
    if (typeof env !== 'string') return env;
    if (!MODERN_VERSIONS.includes(env)) return this.unsupported(id, env);
    const params = msg.params as Json;
    if (!this.#serves(method, params)) return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`) };
    return this.#params(id, method, params) ?? this.#capabilities(id, method, params);
  }

  /** -32022: a revision (of the body, or of the header of a request without an envelope) we do not serve. */
  unsupported(id: Id | null, requested: string): Reply {
    return { status: 400, body: rpcError(id, RPC.UnsupportedProtocolVersion, 'Unsupported protocol version', { supported: this.supported, requested }) };
  }

  /** JSON-RPC shape: a request or notification with a string method; ids are strings or numbers. */
  #shape(msg: Json): Reply | undefined {
    if (msg.jsonrpc !== '2.0' || typeof msg.method !== 'string' || ('id' in msg && typeof msg.id !== 'string' && typeof msg.id !== 'number')) {
      return { status: 400, body: rpcError(idOf(msg), RPC.InvalidRequest, 'Invalid Request: expected a JSON-RPC 2.0 request or notification') };
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
      if (!this.registry.get(params.name)) return { status: 200, body: rpcError(id, RPC.InvalidParams, `Unknown tool: ${params.name}`) };
    } else if (method === 'resources/read') {
      if (typeof params.uri !== 'string') return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.uri must be a string') };
    } else if (method === 'resources/list') {
      if (params.cursor !== undefined && typeof params.cursor !== 'string') return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.cursor must be a string') };
    } else if (method === 'subscriptions/listen') {
      if (!isObject(params.notifications)) return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.notifications must be an object') };
    } else if (this.tasks && TASK_METHODS.has(method)) {
      return this.tasks.params(id, method, params);
    }
    return undefined;
  }

  /**
   * Whether the modern era serves a method: the Tasks extension's when tasks are served;
   * resources/* when views are served and the request declares MCP Apps (a client that does not
   * sees the server it always saw: discover advertises no resources to it).
   */
  #serves(method: string, params: Json): boolean {
    if (MODERN_METHODS.has(method) || (this.tasks !== undefined && TASK_METHODS.has(method))) return true;
    return this.resources && RESOURCE_METHODS.has(method) && declaresUi((params._meta as Json)[META_CLIENT_CAPABILITIES]);
  }

  /** The client-capability rung: tasks/* (and a listen for task notifications) need the Tasks extension declared on the request (-32021). */
  #capabilities(id: Id, method: string, params: Json): Reply | undefined {
    if (!this.tasks) return undefined;
    if (TASK_METHODS.has(method)) return this.tasks.capability(id, params);
    if (method === 'subscriptions/listen' && (params.notifications as Json).taskIds !== undefined && !declaresTasks(params)) return this.tasks.capability(id, params);
    return undefined;
  }
}

/** -32020 (HTTP 400): a standard header that is missing or disagrees with the body. */
function mismatch(id: Id, message: string): Reply {
  return { status: 400, body: rpcError(id, RPC.HeaderMismatch, message) };
}
