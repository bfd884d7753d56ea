import { z } from 'zod';
import type { AnyTool } from './registry.js';

export type JsonSchema = Record<string, unknown>;

/**
 * JSON Schema of a zod schema. `input` schemas describe what a caller may send (defaults make
 * fields optional); `output` schemas what the tool returns. Built once per tool, never per request.
 */
export function toJsonSchema(schema: z.ZodType, io: 'input' | 'output', target: 'draft-7' | 'draft-2020-12' = 'draft-7'): JsonSchema {
  const s = z.toJSONSchema(schema, { io, target, unrepresentable: 'any' }) as JsonSchema;
  delete s.$schema;
  return s;
}

export interface ToolSchemas {
  input: JsonSchema;
  output: JsonSchema;
}

const cache = new WeakMap<AnyTool, ToolSchemas>();

/** The JSON Schemas of a tool's input and output, computed once and cached. */
export function toolSchemas(tool: AnyTool): ToolSchemas {
  let s = cache.get(tool);
  if (!s) {
    s = { input: toJsonSchema(tool.input, 'input'), output: toJsonSchema(tool.output, 'output') };
    cache.set(tool, s);
  }
  return s;
}
