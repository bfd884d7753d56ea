import type { z } from 'zod';
import type { Services } from './services.js';

/** MCP tool annotations (the subset the contract asks every tool to state honestly). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** How the REST projection exposes a tool, as data. `{name}` segments are path parameters. */
export interface RestBinding {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  /** Success status (default 200). */
  status?: number;
  /** Request body limit in bytes (default `config.bodyLimit`). */
  bodyLimit?: 'default' | 'large';
}

/** Who is calling, as seen by the transport. */
export interface Caller {
  /** The API key's id (never the raw key), or null for keyless calls. */
  keyId: string | null;
  /** Client address used for keyless limits ('stdio' / 'memory' for local transports). */
  ip: string;
  transport: 'rest' | 'mcp-http' | 'stdio' | 'memory';
}

/** What a handler receives beside its validated input. */
export interface ToolContext {
  caller: Caller;
  services: Services;
  /** Reports progress; a no-op unless the MCP call carried a progressToken. */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /** Aborted when the caller goes away or the call's deadline passes. */
  signal: AbortSignal;
}

/** Extra MCP content a tool may attach (plain data: tools never import the SDK). */
export type ExtraContent =
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'text'; text: string };

const RICH = Symbol.for('devtoolbox.richResult');

/**
 * A result that is more than JSON: a binary REST body and/or extra MCP content blocks.
 * `json` is the structured part (checked against the output schema, sent as structuredContent
 * over MCP, and as the REST body when there is no `body`).
 */
export interface RichResult<O> {
  readonly [RICH]: true;
  json: O;
  body?: { data: Uint8Array; contentType: string; headers?: Record<string, string> };
  content?: ExtraContent[];
}

export function richResult<O>(r: Omit<RichResult<O>, typeof RICH>): RichResult<O> {
  return { ...r, [RICH]: true };
}

export function isRichResult(v: unknown): v is RichResult<unknown> {
  return typeof v === 'object' && v !== null && (v as Record<symbol, unknown>)[RICH] === true;
}

// zod object schemas only: MCP input schemas are JSON objects.
type AnyObject = z.ZodObject<z.ZodRawShape> | z.ZodType<Record<string, unknown>>;

export interface ToolDefinition<I extends AnyObject = AnyObject, O extends AnyObject = AnyObject> {
  name: string;
  title: string;
  description: string;
  /** Family, used to group tools in /docs and the OpenAPI tags. */
  group: 'formatting' | 'generators' | 'seo' | 'shortener' | 'cron tasks' | 'files' | 'auth';
  input: I;
  output: O;
  annotations: ToolAnnotations;
  rest?: RestBinding | RestBinding[];
  /** Example input for docs (validated against `input` by a test). */
  example?: z.input<I>;
  /** True for tools that answer binary bodies on REST; used by OpenAPI. */
  binary?: { contentTypes: string[]; when?: string };
  /** A REST body field that may carry the caller's API key (like `?api_key=`); read by the projection. */
  apiKeyField?: string;
  handler: (input: z.output<I>, ctx: ToolContext) => Promise<z.output<O> | RichResult<z.output<O>>> | z.output<O> | RichResult<z.output<O>>;
}

export type AnyTool = ToolDefinition<AnyObject, AnyObject>;

/** Declares a tool. Identity function that keeps the types. */
export function defineTool<I extends AnyObject, O extends AnyObject>(def: ToolDefinition<I, O>): ToolDefinition<I, O> {
  return def;
}

export const TOOL_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/** An immutable, checked list of tools. */
export class Registry {
  readonly #byName = new Map<string, AnyTool>();

  constructor(tools: readonly AnyTool[]) {
    for (const t of tools) {
      if (this.#byName.has(t.name)) throw new Error(`Duplicate tool name: ${t.name}`);
      if (!TOOL_NAME.test(t.name) || t.name.length > 64) throw new Error(`Tool name is not snake_case ≤ 64: ${t.name}`);
      this.#byName.set(t.name, t);
    }
  }

  get tools(): AnyTool[] {
    return [...this.#byName.values()];
  }

  get(name: string): AnyTool | undefined {
    return this.#byName.get(name);
  }
}

/** The REST bindings of a tool as an array. */
export function restBindings(tool: AnyTool): RestBinding[] {
  if (!tool.rest) return [];
  return Array.isArray(tool.rest) ? tool.rest : [tool.rest];
}
