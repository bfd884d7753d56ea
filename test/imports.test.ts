/**
 * The import graph of src/, tools/ included: every relative import counts — `import type`,
 * `export … from`, and `import('…')` expressions (lazy loads and inline type references) —
 * because a type-only cycle blurs the layers as much as a runtime one. No cycle, families never
 * import each other, and the core reaches the families only through the family lists.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(import.meta.dirname, '../src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') && !e.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** The relative imports of a file, every kind, resolved to .ts paths: static (type-only too), re-exports, `import('…')`. */
export function importsOf(file: string, text: string, opts: { dynamic?: boolean } = {}): string[] {
  const specs = [
    ...text.matchAll(/^[ \t]*(?:import|export)\s+(?:type\s+)?(?:[^;'"]*?\s+from\s+)?['"](\.[^'"]+)['"]/gm),
    ...(opts.dynamic === false ? [] : text.matchAll(/\bimport\(\s*['"](\.[^'"]+)['"]\s*\)/g)),
  ].map((m) => m[1]!);
  return [...new Set(specs.map((s) => path.resolve(path.dirname(file), s.replace(/\.js$/, '.ts'))))];
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f, fs.readFileSync(f, 'utf8')).filter((t) => fs.existsSync(t))]));
const rel = (f: string) => path.relative(SRC, f).split(path.sep).join('/');

/** Strongly connected components with more than one file (or a self-import): the cycles. */
function cycles(g: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const comp: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1 || (g.get(v) ?? []).includes(v)) out.push(comp.map(rel).sort());
    }
  };
  for (const v of g.keys()) if (!idx.has(v)) visit(v);
  return out;
}

/** The family folder of a file under src/tools/, or null. */
function familyOf(file: string): string | null {
  const parts = rel(file).split('/');
  return parts[0] === 'tools' && parts.length > 2 ? parts[1]! : null;
}

describe('import graph of src/', () => {
  it('reads every kind of import (the parser finds the known edges)', () => {
    expect(graph.get(path.join(SRC, 'app.ts'))!.map(rel)).toContain('tools/index.ts');
    expect(graph.get(path.join(SRC, 'tools/index.ts'))!.map(rel)).toContain('tools/manifests.ts');
    const text = [
      "import type { A } from './a.js';",
      "import { type B } from './b.js';",
      "import {\n  c,\n  d,\n} from './c.js';",
      "export { e } from './e.js';",
      "export * from './f.js';",
      "import './g.js';",
      "const h = await import('./h.js');",
      "type I = import('./i.js').I;",
      "import x from 'zod';",
    ].join('\n');
    expect(importsOf(path.join(SRC, 'x.ts'), text).map(rel)).toStrictEqual(['a.ts', 'b.ts', 'c.ts', 'e.ts', 'f.ts', 'g.ts', 'h.ts', 'i.ts']);
  });

  it('covers src/tools/ and the lazy loads of main.ts', () => {
    expect(graph.get(path.join(SRC, 'tools/shortener/index.ts'))!.map(rel)).toContain('tools/shortener/routes.ts');
    expect(graph.get(path.join(SRC, 'main.ts'))!.map(rel)).toEqual(expect.arrayContaining(['app.ts', 'tools/manifests.ts']));
  });

  it('has no import cycle, type-only ones included', () => {
    expect(cycles(graph)).toStrictEqual([]);
  });

  it('the family list loads no tool: its static imports reach no family index.ts (serve loads data first, issue 18)', () => {
    const statics = new Map(files.map((f) => [f, importsOf(f, fs.readFileSync(f, 'utf8'), { dynamic: false }).filter((t) => fs.existsSync(t))]));
    const seen = new Set<string>();
    const visit = (f: string): void => {
      if (seen.has(f)) return;
      seen.add(f);
      for (const t of statics.get(f) ?? []) visit(t);
    };
    visit(path.join(SRC, 'tools/manifests.ts'));
    expect(seen.size).toBeGreaterThan(8);
    expect([...seen].map(rel).filter((f) => /^tools\/[^/]+\/index\.ts$/.test(f))).toStrictEqual([]);
  });

  it('the core and the families import no transport library (hono, the MCP SDK): only src/http and src/mcp do', () => {
    const transport = /^[ \t]*(?:import|export)\s[^;]*?from\s+['"](?:hono|@hono\/|@modelcontextprotocol\/)|\bimport\(\s*['"](?:hono|@hono\/|@modelcontextprotocol\/)/m;
    const core = files.filter((f) => /^(core|tools|auth|state|net|lib)\/|^(registry|services|invoke|errors)\.ts$/.test(rel(f)));
    expect(core.length).toBeGreaterThan(50);
    expect(core.filter((f) => transport.test(fs.readFileSync(f, 'utf8'))).map(rel)).toStrictEqual([]);
  });

  it('families import no other family', () => {
    const bad: string[] = [];
    for (const [f, targets] of graph) {
      const from = familyOf(f);
      if (from === null) continue;
      for (const t of targets) {
        const to = familyOf(t);
        if (to !== null && to !== from) bad.push(`${rel(f)} → ${rel(t)}`);
      }
    }
    expect(bad).toStrictEqual([]);
  });

  it('the core reaches families only through the family lists (src/tools/index.ts, src/tools/manifests.ts)', () => {
    const bad: string[] = [];
    for (const [f, targets] of graph) {
      if (rel(f).startsWith('tools/')) continue;
      for (const t of targets) if (familyOf(t) !== null) bad.push(`${rel(f)} → ${rel(t)}`);
    }
    expect(bad).toStrictEqual([]);
  });
});
