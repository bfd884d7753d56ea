import type { z } from 'zod';
import type { Caller } from './core/caller.js';
import type { ErrorCode } from './errors.js';
import { ruleIssues, type InputRule } from './input-rules.js';
import type { Services } from './services.js';

export type { Caller } from './core/caller.js';

/** MCP tool annotations (the subset the contract asks every tool to state honestly). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/** How the REST projection exposes a tool, as data. `{name}` segments are path parameters. */
export interface RestBinding {
  /** POST and PATCH take a JSON body; GET and DELETE take query parameters. */
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  /** Success status (default 200). */
  status?: number;
  /** Another success status the tool may answer with (RichResult.status), and what it means: OpenAPI. */
  altStatus?: { status: number; description: string };
  /** Request body limit in bytes (default `config.bodyLimit`). */
  bodyLimit?: 'default' | 'large';
}

export type { InputRule } from './input-rules.js';

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
  /** The REST status of this answer when it is the binding's `altStatus` (e.g. 200 for an idempotent create that found its record). */
  status?: number;
}

/** A class rather than a spread literal with a symbol key: it is built on every call (measured). */
class Rich<O> implements RichResult<O> {
  declare readonly [RICH]: true;
  constructor(
    readonly json: O,
    readonly body: RichResult<O>['body'],
    readonly content: RichResult<O>['content'],
    readonly status?: number,
  ) {}
}
Object.defineProperty(Rich.prototype, RICH, { value: true });

export function richResult<O>(r: Omit<RichResult<O>, typeof RICH>): RichResult<O> {
  return new Rich(r.json, r.body, r.content, r.status);
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
  input: I;
  output: O;
  annotations: ToolAnnotations;
  rest?: RestBinding | RestBinding[];
  /** Example input for docs (validated against `input` by a test). */
  example?: z.input<I>;
  /**
   * Cross-field rules of the input, stated once as data: `defineTool` adds them to the input's
   * validation (a broken rule is a 400 INVALID_INPUT naming the field), and the JSON Schemas of
   * MCP and OpenAPI state them (anyOf/not, if/then; `distinct` in words only).
   */
  inputRules?: readonly InputRule[];
  /** True for tools that answer binary bodies on REST; used by OpenAPI. */
  binary?: { contentTypes: string[]; when?: string };
  /** A REST body field that may carry the caller's API key (like `?api_key=`); read by the projection. */
  apiKeyField?: string;
  /**
   * Error codes this tool can answer with beyond the common ones (bad input, keys, limits, body
   * size; URL errors for open-world tools) and its family's. Documented in OpenAPI.
   */
  errors?: readonly ErrorCode[];
  /** HTTP response headers a successful REST call may carry (name → description): OpenAPI and CORS. */
  responseHeaders?: Readonly<Record<string, string>>;
  /**
   * How a call counts against the caller's limits: `metered` (default) takes one unit; `free`
   * only reports the budget (asking "how much is left?" costs nothing).
   */
  metering?: 'metered' | 'free';
  /**
   * Where the one call path runs the handler: `inline` (default) on the main thread, `cpu` in the
   * worker pool with a deadline (pure handlers that can burn CPU on hostile input).
   */
  cost?: 'inline' | 'cpu';
  /**
   * May take seconds (a large image, a slow site, 10 MB of CSV): a client that declared the MCP
   * Tasks extension (or a REST `Prefer: respond-async`) may get a task to poll instead of waiting.
   */
  longRunning?: boolean;
  /**
   * The MCP Apps view that renders this tool's result (a name in src/views/index.ts, e.g.
   * `qrcode`): tools/list names it as `_meta.ui.resourceUri` for clients that render Apps. The
   * result itself is the same with or without it.
   */
  view?: string;
  handler: (input: z.output<I>, ctx: ToolContext) => Promise<z.output<O> | RichResult<z.output<O>>> | z.output<O> | RichResult<z.output<O>>;
}

/**
 * Any tool, whatever its schemas: the handler takes `never` so that every defineTool() result is
 * assignable without a cast (the call path hands it the input its own schema produced).
 */
export type AnyTool = Omit<ToolDefinition<AnyObject, AnyObject>, 'handler' | 'example'> & {
  example?: unknown;
  handler: (input: never, ctx: ToolContext) => unknown;
};

/** The OpenAPI tag (and /docs heading) of a family. */
export interface FamilyTag {
  name: string;
  description: string;
}

/** Declares a tool: the definition as given, with its `inputRules` added to the input's validation. */
export function defineTool<I extends AnyObject, O extends AnyObject>(def: ToolDefinition<I, O>): ToolDefinition<I, O> {
  const rules = def.inputRules;
  if (!rules?.length) return def;
  // A refinement runs only on an input whose fields are valid, with defaults applied; zod 4's
  // superRefine returns a schema of the same class (an object stays an object).
  const input = def.input.superRefine((value, ctx) => {
    for (const issue of ruleIssues(rules, value as Record<string, unknown>)) ctx.addIssue({ code: 'custom', path: [issue.path], message: issue.message });
  }) as I;
  return { ...def, input };
}

export const TOOL_NAME = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

/** What the registry needs to know of a family: its name, tag, tools and shared error codes. */
export interface ToolGroup {
  name: string;
  tag: FamilyTag;
  tools: readonly AnyTool[];
  errors?: readonly ErrorCode[];
  /** One line for MCP's `instructions`: what the family's tools are for (the tag's description when absent). */
  instructions?: string;
}

/** The opening of MCP's `instructions`; each family with tools adds its own line. */
const INSTRUCTIONS_HEAD = 'devtoolbox: developer tools for agents. Tool families:';

const UNGROUPED: ToolGroup = { name: 'tools', tag: { name: 'Tools', description: 'Tools.' }, tools: [] };

/**
 * An immutable, checked list of tools, each with the group (family) it came from. `G`: what the
 * groups are (the families, for the HTTP face and OpenAPI, which read their routes).
 */
export class Registry<G extends ToolGroup = ToolGroup> {
  readonly #byName = new Map<string, AnyTool>();
  readonly #groupOf = new Map<string, ToolGroup>();
  readonly #tools: AnyTool[];
  /** The groups that have tools, in order. */
  readonly groups: readonly ToolGroup[];
  /** Every group it was built from, in order, those without tools too (a family of routes only). */
  readonly families: readonly G[];
  /** MCP's `instructions` (initialize, server/discover): one line per group with tools. */
  readonly instructions: string;

  /** `source`: tools (one anonymous group, for tests) or families. */
  constructor(source: readonly AnyTool[] | readonly G[]) {
    this.families = isGroupList(source) ? [...source] : [];
    const groups: readonly ToolGroup[] = isGroupList(source) ? this.families : [{ ...UNGROUPED, tools: source as readonly AnyTool[] }];
    for (const g of groups) {
      for (const t of g.tools) {
        if (this.#byName.has(t.name)) throw new Error(`Duplicate tool name: ${t.name}`);
        if (!TOOL_NAME.test(t.name) || t.name.length > 64) throw new Error(`Tool name is not snake_case ≤ 64: ${t.name}`);
        this.#byName.set(t.name, t);
        this.#groupOf.set(t.name, g);
      }
    }
    this.#tools = [...this.#byName.values()];
    this.groups = groups.filter((g) => g.tools.length > 0);
    this.instructions = [INSTRUCTIONS_HEAD, ...this.groups.map((g) => `- ${g.name}: ${g.instructions ?? g.tag.description}`)].join('\n');
  }

  get tools(): AnyTool[] {
    return this.#tools;
  }

  get(name: string): AnyTool | undefined {
    return this.#byName.get(name);
  }

  /** The group (family) a tool belongs to. */
  groupOf(tool: AnyTool): ToolGroup {
    return this.#groupOf.get(tool.name) ?? UNGROUPED;
  }
}

function isGroupList<G extends ToolGroup>(source: readonly AnyTool[] | readonly G[]): source is readonly G[] {
  return source.length > 0 && 'tools' in source[0]! && 'tag' in source[0]!;
}

/** The REST bindings of a tool as an array. */
export function restBindings(tool: AnyTool): RestBinding[] {
  if (!tool.rest) return [];
  return Array.isArray(tool.rest) ? tool.rest : [tool.rest];
}
