import { z } from 'zod';
import { rulesSchema } from './input-rules.js';
import type { AnyTool } from './registry.js';

export type JsonSchema = Record<string, unknown>;

/**
 * JSON Schema of a zod schema. `input` schemas describe what a caller may send (defaults make
 * fields optional); `output` schemas what the tool returns. Built once per tool, never per request.
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output', target: 'draft-7' | 'draft-2020-12' = 'draft-7'): JsonSchema {
  const s = z.toJSONSchema(schema, { io, target, unrepresentable: 'any' }) as JsonSchema;
  delete s.$schema;
  dropSafeIntegerBounds(s);
  return s;
}

/**
 * zod states ±(2^53 - 1) on every `.int()` without bounds of its own: ~55 bytes a field that
 * every tools/list carries into the model's context (issue 34) and that say nothing a JSON
 * integer does not. Bounds a schema sets itself are kept.
 */
function dropSafeIntegerBounds(node: unknown): void {
  if (Array.isArray(node)) {
    for (const n of node) dropSafeIntegerBounds(n);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  const o = node as Record<string, unknown>;
  if (o.type === 'integer') {
    if (o.minimum === Number.MIN_SAFE_INTEGER) delete o.minimum;
    if (o.maximum === Number.MAX_SAFE_INTEGER) delete o.maximum;
  }
  for (const v of Object.values(o)) dropSafeIntegerBounds(v);
}

export interface ToolSchemas {
  input: JsonSchema;
  output: JsonSchema;
}

/**
 * The input JSON Schema of a tool: its zod schema's, and its `inputRules` appended to `allOf`
 * (after any the schema states itself), so that what validates against it is what the server
 * validates.
 */
export function toolInputSchema(tool: AnyTool, target: 'draft-7' | 'draft-2020-12' = 'draft-7'): JsonSchema {
  const s = toJsonSchema(tool.input, 'input', target);
  const allOf = [...((s.allOf as unknown[] | undefined) ?? []), ...rulesSchema(tool.inputRules ?? [])];
  return allOf.length ? { ...s, allOf } : s;
}

const cache = new WeakMap<AnyTool, ToolSchemas>();

/** The JSON Schemas of a tool's input (MCP's inputSchema) and output, computed once and cached. */
export function toolSchemas(tool: AnyTool): ToolSchemas {
  let s = cache.get(tool);
  if (!s) {
    s = { input: toolInputSchema(tool), output: toJsonSchema(tool.output, 'output') };
    cache.set(tool, s);
  }
  return s;
}
