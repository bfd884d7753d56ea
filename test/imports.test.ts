/**
 * The import graph of src/ (runtime imports only; `import type` is erased): no cycle, families
 * never import each other, and the core reaches the families only through the family list.
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

/** Runtime imports of a file (relative ones, resolved to .ts paths under src/). */
export function runtimeImports(file: string, text: string): string[] {
  const out: string[] = [];
  const re = /^(?:import|export)\s+(type\s+)?([^;]*?)\s+from\s+'(\.[^']+)'/gms;
  for (const m of text.matchAll(re)) {
    if (m[1]) continue;
    const braces = /^\{([^}]*)\}$/.exec(m[2]!.trim());
    if (braces && braces[1]!.split(',').map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith('type '))) continue;
    out.push(path.resolve(path.dirname(file), m[3]!.replace(/\.js$/, '.ts')));
  }
  for (const m of text.matchAll(/^import\s+'(\.[^']+)'/gm)) out.push(path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts')));
  return out;
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((f) => [f, runtimeImports(f, fs.readFileSync(f, 'utf8')).filter((t) => fs.existsSync(t))]));
const rel = (f: string) => path.relative(SRC, f);

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
  const parts = rel(file).split(path.sep);
  return parts[0] === 'tools' && parts.length > 2 ? parts[1]! : null;
}

describe('import graph of src/', () => {
  it('reads real imports (the parser finds the known edges)', () => {
    expect(graph.get(path.join(SRC, 'app.ts'))!.map(rel)).toContain('tools/index.ts');
    expect(runtimeImports(path.join(SRC, 'x.ts'), "import type { A } from './a.js';\nimport { type B } from './b.js';\nimport { c } from './c.js';")).toStrictEqual([path.join(SRC, 'c.ts')]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph)).toStrictEqual([]);
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

  it('the core reaches families only through the family list (src/tools/index.ts)', () => {
    const bad: string[] = [];
    for (const [f, targets] of graph) {
      if (rel(f).startsWith(`tools${path.sep}`)) continue;
      for (const t of targets) if (familyOf(t) !== null) bad.push(`${rel(f)} → ${rel(t)}`);
    }
    expect(bad).toStrictEqual([]);
  });
});
