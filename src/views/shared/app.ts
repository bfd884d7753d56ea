/**
 * What every view shares (browser side, bundled into each view by scripts/build-views.mjs): the
 * connection to the host through the official App SDK, and a small element builder. A view
 * renders `structuredContent` (and content blocks) of a tool result, the same result a host
 * without Apps shows as text.
 */
import { App, applyDocumentTheme, applyHostStyleVariables, type McpUiHostContext } from '@modelcontextprotocol/ext-apps';
import type { CallToolResult } from '@modelcontextprotocol/client';

/** A tool result as the view receives it. */
export type ToolResult = CallToolResult;

/** What a view does with the tool's input and result. */
export interface ViewHandlers {
  /** The arguments the tool was called with (before the result arrives). */
  input?(args: Record<string, unknown>): void;
  /** The result: a view renders it. */
  result(result: ToolResult): void;
}

/** Connects to the host and hands the tool's input and result to the view; returns the App (for tool calls). */
export function startView(name: string, handlers: ViewHandlers): App {
  const app = new App({ name: `devtoolbox-${name}`, version: '1.0.0' }, {}, { autoResize: true });
  app.ontoolinput = (p) => handlers.input?.((p.arguments ?? {}) as Record<string, unknown>);
  app.ontoolresult = (r) => {
    try {
      handlers.result(r as ToolResult);
    } catch (err) {
      showError(err);
    }
  };
  app.onhostcontextchanged = (ctx) => theme(ctx);
  app.connect().then(
    () => theme(app.getHostContext()),
    (err: unknown) => showError(err),
  );
  return app;
}

function theme(ctx: McpUiHostContext | undefined): void {
  if (ctx?.theme) applyDocumentTheme(ctx.theme);
  if (ctx?.styles?.variables) applyHostStyleVariables(ctx.styles.variables);
}

/** The view's root element, emptied. */
export function root(): HTMLElement {
  const r = document.getElementById('app')!;
  r.replaceChildren();
  return r;
}

/** Shows an error in place of the view. */
export function showError(err: unknown): void {
  root().append(h('p', { class: 'error', role: 'alert' }, err instanceof Error ? err.message : String(err)));
}

/** A tool error result's message (the contract's `{"error":{code,message}}` text), or undefined. */
export function errorOf(r: ToolResult): string | undefined {
  if (!r.isError) return undefined;
  const text = r.content?.find((c) => c.type === 'text');
  if (!text || text.type !== 'text') return 'The tool failed';
  try {
    const e = (JSON.parse(text.text) as { error?: { code?: string; message?: string } }).error;
    return e ? `${e.code ?? 'ERROR'}: ${e.message ?? ''}` : text.text;
  } catch {
    return text.text;
  }
}

type Child = Node | string | number | null | undefined | false;

/** An element with attributes (`on*` functions become listeners) and children; text is never parsed as HTML. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, unknown> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(typeof c === 'number' ? String(c) : c);
  return el;
}

/** A byte count for people: 1234 → "1.2 KB". */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(2)} MB`;
}

/** A time for people, in the viewer's locale (ISO strings from the tools). */
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}
