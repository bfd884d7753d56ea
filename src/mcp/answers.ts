/**
 * What our dispatch answers, and the JSON text of MCP results both eras share: the tool
 * listing, a CallToolResult of a call outcome, and the pre-serialised heads of the static
 * answers (tools/list, server/discover) with a request's id appended.
 */
import type { CallHeaders, CallOutcome } from '../core/call.js';
import { hasIcon, mcpIcons, SERVER_ICON, TOOL_ICON_SIZES, type McpIcon } from '../docs/icons.js';
import { errorObject, type ToolError } from '../errors.js';
import { toolSchemas } from '../json-schema.js';
import type { Registry } from '../registry.js';
import { SERVER_INFO } from '../version.js';
import type { ViewResources } from './resources.js';
import type { Json } from './wire.js';

/** One answer: the JSON-RPC message text, its HTTP status (ignored on stdio) and extra headers. */
export interface Reply {
  status: number;
  /** A Buffer for the large pre-serialised answers (tools/list, discover): encoded once, not per request. */
  body: string | Buffer;
  headers?: CallHeaders;
}

/** The dispatcher's answer to one POST /mcp. */
export type HttpAnswer =
  | { kind: 'reply'; reply: Reply }
  | { kind: 'stream'; status: number; headers: Record<string, string>; body: ReadableStream<Uint8Array> }
  | { kind: 'accepted' }
  /** Not ours: the SDK answers (legacy initialize, ping, batches, notifications, odd requests). */
  | { kind: 'sdk' };

export const SDK: HttpAnswer = { kind: 'sdk' };
export const ACCEPTED: HttpAnswer = { kind: 'accepted' };
export const asReply = (r: Reply): HttpAnswer => ({ kind: 'reply', reply: r });

/** A reply answer. */
export function reply(status: number, body: string | Buffer, headers?: CallHeaders): HttpAnswer {
  return { kind: 'reply', reply: headers ? { status, body, headers } : { status, body } };
}

/**
 * The MCP `Tool` listing of a registry (same for both eras). With `iconBaseUrl` (a server that
 * serves /icons/ there), each tool carries its family's icons; with `views` (for a client that
 * renders MCP Apps), a tool with a view carries `_meta.ui.resourceUri` (./resources.ts).
 */
export function listing(registry: Registry, iconBaseUrl?: string, views?: ViewResources): Json[] {
  return registry.tools.map((t) => {
    const s = toolSchemas(t);
    const family = registry.groupOf(t).name;
    const tool: Json = {
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: s.input,
      outputSchema: s.output,
      annotations: { title: t.title, ...t.annotations },
      ...(iconBaseUrl !== undefined && hasIcon(family) && { icons: mcpIcons(iconBaseUrl, family, TOOL_ICON_SIZES) }),
    };
    const meta = views?.toolMeta(t.name);
    return meta ? { ...tool, _meta: meta } : tool;
  });
}

/**
 * The server's `Implementation` for initialize (legacy) and server/discover (2026-07-28): with
 * its icons when `iconBaseUrl` is given. The `_meta` serverInfo of every other answer stays
 * {name, version}: the icons would ride on each tool call.
 */
export function implementation(iconBaseUrl?: string): { readonly name: string; readonly version: string; readonly icons?: McpIcon[] } {
  return iconBaseUrl === undefined ? SERVER_INFO : { ...SERVER_INFO, icons: mcpIcons(iconBaseUrl, SERVER_ICON) };
}

/**
 * MCP error result in the contract's shape: one text block, no structuredContent. The error
 * object names the request (`request_id`, the HTTP answer's X-Request-Id) as on REST: the text
 * is what a model and a client show, and what a user quotes to support.
 */
export function errorResult(err: ToolError, requestId: string | undefined): { isError: true; content: Array<{ type: 'text'; text: string }> } {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: errorObject(err, requestId) }) }] };
}

/**
 * The CallToolResult of a call outcome, as JSON text (`prefix` goes first, e.g. `"resultType":"complete",`);
 * `requestId` names the request in a failure's error object.
 */
export function callResultJson(out: CallOutcome, prefix: string, suffix: string, requestId: string | undefined): string {
  if (!out.ok) return `{${prefix}${JSON.stringify(errorResult(out.error, requestId)).slice(1, -1)}${suffix}}`;
  const r = out.value;
  const text = JSON.stringify(r.json);
  let extra = '';
  if (r.content) for (const c of r.content) extra += `${JSON.stringify(c)},`;
  return `{${prefix}"content":[${extra}{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}${suffix}}`;
}

/**
 * `{"result":…` of a static answer, serialised and encoded once: the list is static for the
 * life of the process, and encoding its 50 KB (non-ASCII) string per request cost ≈ 70 µs.
 */
export function resultHead(result: unknown): Buffer {
  return Buffer.from(`{"result":${JSON.stringify(result)}`);
}

/** `{"result":…` + `,"jsonrpc":"2.0","id":…}` (the SDK's member order). */
export function withId(head: Buffer, idJson: string): Buffer {
  return Buffer.concat([head, Buffer.from(`,"jsonrpc":"2.0","id":${idJson}}`)]);
}
