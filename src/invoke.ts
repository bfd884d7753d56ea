import type { z } from 'zod';
import { ToolError, toToolError } from './errors.js';
import { isRichResult, richResult, type AnyTool, type RichResult, type ToolContext } from './registry.js';

/** Field-level validation details: `[{path, message}]`, the shape every 400 INVALID_INPUT carries. */
export function zodDetails(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.slice(0, 20).map((i) => ({
    path: i.path.map(String).join('.') || '(root)',
    message: i.message,
  }));
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates raw input against the tool's schema, runs the handler, and checks the result
 * against the output schema. Knows no transport. Rejects with ToolError only.
 */
export async function invokeTool(tool: AnyTool, raw: unknown, ctx: ToolContext): Promise<RichResult<Record<string, unknown>>> {
  return runTool(tool, raw, ctx);
}

/**
 * invokeTool, synchronous when the handler is (then it throws ToolError instead of rejecting):
 * every promise hop is a measurable part of a small call (issue 21). The call path uses it.
 */
export function runTool(tool: AnyTool, raw: unknown, ctx: ToolContext): RichResult<Record<string, unknown>> | Promise<RichResult<Record<string, unknown>>> {
  if (!isPlainObject(raw)) throw new ToolError('INVALID_INPUT', 'The input must be a JSON object');
  const parsed = tool.input.safeParse(raw);
  if (!parsed.success) {
    throw new ToolError('INVALID_INPUT', `Invalid input for ${tool.name}`, zodDetails(parsed.error));
  }
  let out: unknown;
  try {
    out = tool.handler(parsed.data as never, ctx);
  } catch (err) {
    throw handlerError(tool, err, ctx);
  }
  if (out instanceof Promise) {
    return out.then(
      (v: unknown) => checkOutput(tool, v, ctx),
      (err: unknown) => {
        throw handlerError(tool, err, ctx);
      },
    );
  }
  return checkOutput(tool, out, ctx);
}

function handlerError(tool: AnyTool, err: unknown, ctx: ToolContext): ToolError {
  return toToolError(err, (msg, cause) => ctx.services.log.error(`${msg} in ${tool.name}`, cause));
}

/** The handler's result, checked against the output schema. */
function checkOutput(tool: AnyTool, out: unknown, ctx: ToolContext): RichResult<Record<string, unknown>> {
  const rich = isRichResult(out) ? out : undefined;
  const checked = tool.output.safeParse(rich ? rich.json : out);
  if (!checked.success) {
    ctx.services.log.error(`output of ${tool.name} does not match its schema`, zodDetails(checked.error));
    throw new ToolError('INTERNAL', 'Internal error');
  }
  return richResult({ json: checked.data as Record<string, unknown>, body: rich?.body, content: rich?.content, status: rich?.status });
}
