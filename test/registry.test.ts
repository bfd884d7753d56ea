import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, Registry, TOOL_NAME, restBindings, type AnyTool } from '../src/registry.js';
import { toolSchemas } from '../src/json-schema.js';
import { allTools, createRegistry } from '../src/tools/index.js';

const registry = createRegistry();

function fieldsOf(schema: Record<string, unknown>): Array<[string, Record<string, unknown>]> {
  return Object.entries((schema.properties ?? {}) as Record<string, Record<string, unknown>>);
}

describe('registry invariants', () => {
  it('has unique snake_case names of at most 64 characters', () => {
    const names = registry.tools.map((t) => t.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) {
      expect(n).toMatch(TOOL_NAME);
      expect(n.length).toBeLessThanOrEqual(64);
    }
  });

  it('refuses a duplicate name at start-up', () => {
    const t = allTools[0]!;
    expect(() => new Registry([t, t])).toThrow(`Duplicate tool name: ${t.name}`);
  });

  it('refuses a name that is not snake_case', () => {
    const bad: AnyTool = { ...allTools[0]!, name: 'Bad-Name' };
    expect(() => new Registry([bad])).toThrow(/snake_case/);
  });

  for (const tool of allTools) {
    describe(tool.name, () => {
      it('has a title, a description and a described object input schema', () => {
        expect(tool.title.length).toBeGreaterThan(3);
        expect(tool.description.length).toBeGreaterThan(20);
        const { input, output } = toolSchemas(tool);
        expect(input.type).toBe('object');
        expect(output.type).toBe('object');
        for (const [name, prop] of fieldsOf(input)) {
          expect(typeof prop.description, `${tool.name}.${name} has no description`).toBe('string');
        }
      });

      it('has honest annotations', () => {
        const a = tool.annotations;
        expect(typeof a.readOnlyHint).toBe('boolean');
        expect(typeof a.idempotentHint).toBe('boolean');
        expect(typeof a.openWorldHint).toBe('boolean');
        if (tool.name.endsWith('_delete')) expect(a.destructiveHint).toBe(true);
        if (a.readOnlyHint) expect(a.destructiveHint ?? false).toBe(false);
        for (const b of restBindings(tool)) {
          // A GET binding must not change state.
          if (b.method === 'GET') expect(a.readOnlyHint).toBe(true);
        }
      });

      it('has an example that its own input schema accepts', () => {
        expect(tool.example, `${tool.name} has an example`).toBeDefined();
        const r = tool.input.safeParse(tool.example);
        expect(r.success, JSON.stringify(r.error?.issues)).toBe(true);
      });
    });
  }

  it('declares fetching tools as open-world and pure formatters as closed', () => {
    const byName = new Map(allTools.map((t) => [t.name, t]));
    for (const n of ['json_yaml_convert', 'base_convert', 'html_entity']) {
      expect(byName.get(n)!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    }
    for (const n of ['image_convert', 'meta_extract', 'seo_check']) {
      if (byName.has(n)) expect(byName.get(n)!.annotations.openWorldHint).toBe(true);
    }
  });

  it('defineTool keeps the definition as plain data', () => {
    const t = defineTool({
      name: 'x_y',
      title: 'X',
      description: 'A tool used only by this test.',
      input: z.object({ a: z.string().describe('a') }),
      output: z.object({ b: z.string() }),
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      handler: ({ a }) => ({ b: a }),
    });
    expect(t.name).toBe('x_y');
    expect(new Registry([t]).get('x_y')).toBe(t);
  });
});
