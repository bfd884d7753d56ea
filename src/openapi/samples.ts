import type { JsonSchema } from '../json-schema.js';
import { isRichResult, type AnyTool, type ToolContext } from '../registry.js';

/**
 * A plausible value of a JSON Schema (its example/default/const/enum when it has one), for
 * operations whose tool gives no example: every operation shows a body a reader can copy.
 */
export function sampleOf(schema: unknown, depth = 0): unknown {
  if (typeof schema !== 'object' || schema === null || depth > 8) return null;
  const s = schema as JsonSchema;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if ('const' in s) return s.const;
  if ('default' in s) return s.default;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  for (const k of ['anyOf', 'oneOf'] as const) {
    const alts = s[k];
    if (Array.isArray(alts)) {
      const pick = alts.find((a) => (a as JsonSchema).type !== 'null') ?? alts[0];
      return sampleOf(pick, depth + 1);
    }
  }
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, unknown>)) out[k] = sampleOf(v, depth + 1);
      return out;
    }
    case 'array':
      return s.items ? [sampleOf(s.items, depth + 1)] : [];
    case 'string':
      if (s.format === 'date-time') return '2026-11-22T09:00:00.000Z';
      if (s.format === 'uri') return 'https://example.com/';
      if (s.format === 'email') return 'dev@example.com';
      return typeof s.minLength === 'number' && s.minLength > 6 ? 'x'.repeat(s.minLength) : 'string';
    case 'integer':
    case 'number': {
      // 1 unless the bounds say otherwise (zod's safe-integer bounds are not worth showing).
      let n = 1;
      if (typeof s.minimum === 'number' && s.minimum > n) n = s.minimum;
      if (typeof s.maximum === 'number' && s.maximum < n) n = s.maximum;
      return n;
    }
    case 'boolean':
      return true;
    default:
      return null;
  }
}

const poisonedServices = new Proxy(
  {},
  {
    get() {
      throw new Error('docs: this tool uses services; no static example');
    },
  },
);

/**
 * The real answer of a tool to its example input, computed at doc-build time, but only for a
 * tool that is pure and synchronous: read-only, no network, no binary body, never touching its
 * services (a proxy that throws stands in for them), and giving the same answer twice. Anything
 * else (stateful, fetching, async, clock-dependent) gets no computed example.
 */
export function staticResponseExample(tool: AnyTool, example: unknown): Record<string, unknown> | undefined {
  const a = tool.annotations;
  if (!a.readOnlyHint || a.openWorldHint || tool.binary || example === undefined) return undefined;
  const run = (): string | undefined => {
    try {
      const parsed = tool.input.safeParse(example);
      if (!parsed.success) return undefined;
      const ctx: ToolContext = {
        caller: { keyId: null, ip: 'docs', transport: 'memory' },
        services: poisonedServices as ToolContext['services'],
        progress: () => Promise.reject(new Error('docs: no progress')),
        signal: AbortSignal.abort(),
      };
      const out = tool.handler(parsed.data as never, ctx) as unknown;
      if (typeof out === 'object' && out !== null && typeof (out as Promise<unknown>).then === 'function') {
        (out as Promise<unknown>).then(
          () => {},
          () => {},
        );
        return undefined;
      }
      const json = isRichResult(out) ? (out.body ? undefined : out.json) : out;
      if (json === undefined) return undefined;
      const checked = tool.output.safeParse(json);
      return checked.success ? JSON.stringify(checked.data) : undefined;
    } catch {
      return undefined;
    }
  };
  const first = run();
  if (first === undefined || run() !== first) return undefined;
  return { success: true, ...(JSON.parse(first) as Record<string, unknown>) };
}

