/**
 * MCP Apps (extension `io.modelcontextprotocol/ui`, stable 2026-01-26; docs/apps.md): the one
 * source of truth for the `ui://devtoolbox/<view>` resources of a registry — what resources/list
 * lists, what resources/read returns, and the `_meta.ui` a tool with a view carries in
 * tools/list. Our dispatch (both eras' shared answers) and the SDK's server (./server.ts) both
 * read it. A view whose HTML has not been built is left out entirely (no tool names it), so
 * every `resourceUri` a client sees resolves.
 */
import type { Registry } from '../registry.js';
import { VIEWS, viewHtml, type ViewInfo } from '../views/index.js';
import { isObject } from './wire.js';

/** The extension's identifier: servers advertise it under `capabilities.extensions`, hosts declare it. */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui';
/** The MIME type of an MCP App's HTML. */
export const APP_MIME = 'text/html;profile=mcp-app';
const URI_PREFIX = 'ui://devtoolbox/';

/**
 * What every view asks of its host: no external origin of any kind (empty lists: the host's
 * restrictive default CSP, `connect-src 'none'`), a border. The views are self-contained.
 */
const UI_META = { csp: { connectDomains: [] as string[], resourceDomains: [] as string[] }, prefersBorder: true } as const;

/** A resources/list entry. */
export interface McpResource {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  _meta: { ui: typeof UI_META };
}

/** A resources/read result (without the era's envelope fields). */
export interface ReadResult {
  contents: Array<{ uri: string; mimeType: string; text: string; _meta: { ui: typeof UI_META } }>;
}

/** The views a registry's tools name, with their HTML. */
export class ViewResources {
  readonly #uriOfTool = new Map<string, string>();
  readonly #byUri = new Map<string, { info: ViewInfo; html: string }>();
  /** resources/list's entries, in src/views order. */
  readonly list: readonly McpResource[];

  /** `html`: a view's built HTML (src/views' reader by default; tests may pass another). */
  constructor(registry: Registry, html: (name: string) => string | undefined = viewHtml) {
    const used = new Set<string>();
    for (const t of registry.tools) {
      if (t.view === undefined) continue;
      if (!VIEWS.some((v) => v.name === t.view)) throw new Error(`Tool ${t.name} names an unknown view: ${t.view}`);
      used.add(t.view);
    }
    for (const info of VIEWS) {
      const text = used.has(info.name) ? html(info.name) : undefined;
      if (text !== undefined) this.#byUri.set(URI_PREFIX + info.name, { info, html: text });
    }
    for (const t of registry.tools) if (t.view !== undefined && this.#byUri.has(URI_PREFIX + t.view)) this.#uriOfTool.set(t.name, URI_PREFIX + t.view);
    this.list = [...this.#byUri].map(([uri, { info }]) => ({ uri, name: info.name, title: info.title, description: info.description, mimeType: APP_MIME, _meta: { ui: UI_META } }));
  }

  /** Whether any view is served (otherwise nothing of the extension is advertised). */
  get size(): number {
    return this.list.length;
  }

  /** The `_meta` a tool carries in tools/list for a client that renders Apps, if it has a view. */
  toolMeta(toolName: string): { ui: { resourceUri: string } } | undefined {
    const uri = this.#uriOfTool.get(toolName);
    return uri === undefined ? undefined : { ui: { resourceUri: uri } };
  }

  /** resources/read of `uri`, or undefined: no such resource here. */
  read(uri: string): ReadResult | undefined {
    const v = this.#byUri.get(uri);
    return v && { contents: [{ uri, mimeType: APP_MIME, text: v.html, _meta: { ui: UI_META } }] };
  }
}

/**
 * Whether client capabilities declare MCP Apps for our views: `extensions["io.modelcontextprotocol/ui"]`
 * naming our MIME type in `mimeTypes` (required by the extension; the SDK's getUiCapability test).
 */
export function declaresUi(capabilities: unknown): boolean {
  if (!isObject(capabilities) || !isObject(capabilities.extensions)) return false;
  const ui = capabilities.extensions[UI_EXTENSION];
  return isObject(ui) && Array.isArray(ui.mimeTypes) && ui.mimeTypes.includes(APP_MIME);
}

/** The error of a resources/read naming no resource of ours: -32602 with the URI (SEP-2164; the SDK v2 reads it as ResourceNotFoundError). */
export function notFoundMessage(uri: string): string {
  // The message is for people: a URI of a megabyte is cut (data.uri carries it whole).
  return `Resource not found: ${uri.length > 200 ? `${uri.slice(0, 200)}…` : uri}`;
}
