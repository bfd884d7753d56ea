/**
 * The MCP wire vocabulary our dispatch speaks (./dispatch.ts): protocol revisions, the methods
 * each era serves, the `_meta` keys of the 2026-07-28 envelope, the JSON-RPC error codes, and
 * the small readers and writers of messages and headers. No state, no SDK.
 */
/** The revisions served statelessly with the `_meta` envelope. */
export const MODERN_VERSIONS: readonly string[] = ['2026-07-28'];

/** Methods that exist only in the modern era (an envelope-less request for one is a malformed modern request). */
export const MODERN_ONLY_METHODS: ReadonlySet<string> = new Set(['server/discover', 'subscriptions/listen']);
/** Methods the modern era serves; anything else is 404 -32601 (ping, logging/setLevel, initialize, prompts/*, resources/* …). */
export const MODERN_METHODS: ReadonlySet<string> = new Set(['server/discover', 'tools/list', 'tools/call', 'subscriptions/listen']);
/** Methods served to a modern request that declares MCP Apps (./resources.ts): -32601 for any other, as before. */
export const RESOURCE_METHODS: ReadonlySet<string> = new Set(['resources/list', 'resources/read']);

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

/** A JSON-RPC request id. */
export type Id = string | number;
/** A JSON object of a message. */
export type Json = Record<string, unknown>;

/** Request headers of an HTTP exchange (lower-case names); absent on stdio. */
export type HeaderLookup = (name: string) => string | null;

/** Where notifications of a running request go (its SSE stream, or stdout). */
export type Emit = (message: string) => void;

/** A JSON-RPC error response, as text; `requestId` (the HTTP answer's X-Request-Id) goes into its data. */
export function rpcError(id: Id | null, code: number, message: string, data?: unknown, requestId?: string): string {
  data = withRequestId(data, requestId);
  const error = data === undefined ? { code, message } : { code, message, data };
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/**
 * A JSON-RPC error's data naming its request: `request_id` is added (last) to an object or
 * absent data; other data (a string, an array) stays as it is. No id (stdio): unchanged.
 */
export function withRequestId(data: unknown, requestId: string | undefined): unknown {
  return requestId !== undefined && (data === undefined || isObject(data)) ? { ...(data as object | undefined), request_id: requestId } : data;
}

/**
 * The text of a JSON-RPC error response (rpcError's) with `request_id` in its data, as rpcError
 * would have written it given the id. For answers built before the id is known (the modern
 * ladder's verdicts): errors only, so parsing their few hundred bytes again costs nothing that
 * matters. A body that is not an error response is returned as it is.
 */
export function stampRequestId(body: string, requestId: string | undefined): string {
  if (requestId === undefined) return body;
  const msg: unknown = JSON.parse(body);
  if (!isObject(msg) || !isObject(msg.error)) return body;
  const data = withRequestId(msg.error.data, requestId);
  if (data !== undefined) msg.error.data = data;
  return JSON.stringify(msg);
}

/** Whether a value is a JSON object (not null, not an array). */
export function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A request id as JSON-RPC allows it, or null when it cannot be read. */
export function idOf(msg: unknown): Id | null {
  if (!isObject(msg)) return null;
  const id = msg.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
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

/** A tool's progress reports as `notifications/progress` messages for `token`. */
export function progressTo(emit: Emit, token: unknown): (progress: number, total?: number, message?: string) => Promise<void> {
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
