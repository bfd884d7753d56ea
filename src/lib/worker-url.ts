import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** How to start a worker thread on a module of this package. */
export interface ModuleWorker {
  /** What `new Worker()` is given. */
  url: URL;
  /** Worker execArgv; undefined = inherit the process's. */
  execArgv?: string[];
}

/**
 * The worker for module `name` (without extension) beside `here` (the caller's module URL).
 *
 * - Built (`dist/…/*.js`): `<name>.js` is plain JS; nothing else is needed.
 * - Sources (`src/…/*.ts`, under vitest or tsx): the entry is `<name>.ts`. Node 20 does not
 *   apply loader hooks from a worker's `execArgv: ['--import', 'tsx']` to the worker's entry
 *   module itself (measured on 20.20: ERR_UNKNOWN_FILE_EXTENSION), so the worker starts from a
 *   two-line data: module that registers tsx, then imports `<name>.ts`. vitest's own transform
 *   does not reach worker threads, hence tsx there too.
 */
export function moduleWorker(here: string, name: string): ModuleWorker {
  if (!here.endsWith('.ts')) return { url: new URL(`./${name}.js`, here) };
  const entry = new URL(`./${name}.ts`, here).href;
  const code = `import { register } from ${JSON.stringify(tsxEsmApi(here))};\nregister();\nawait import(${JSON.stringify(entry)});\n`;
  // Not the parent's flags: a parent started with --import tsx would register tsx twice.
  return { url: new URL(`data:text/javascript,${encodeURIComponent(code)}`), execArgv: [] };
}

/**
 * tsx's ESM register() as a file URL. Read from tsx's `exports` map: require.resolve would
 * pick the `require` condition, whose CommonJS build fails to load its own ESM half in a worker.
 */
function tsxEsmApi(here: string): string {
  const pkgPath = createRequire(here).resolve('tsx/package.json');
  const pkg = JSON.parse(fs.readFileSync(pkgPath, 'utf8')) as { exports?: Record<string, { import?: { default?: string } }> };
  const rel = pkg.exports?.['./esm/api']?.import?.default;
  if (!rel) throw new Error('tsx no longer exports ./esm/api for import: a TypeScript worker cannot be loaded');
  return pathToFileURL(path.join(path.dirname(pkgPath), rel)).href;
}
