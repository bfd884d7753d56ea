import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** How to start a pool worker and where its default tool list lives. */
export interface WorkerEntry {
  /** What `new Worker()` is given. */
  url: URL;
  /** Worker execArgv; undefined = inherit the process's. */
  execArgv?: string[];
  /** The module exporting `allTools`, as the worker should import it. */
  toolsModule: URL;
}

/**
 * Picks the worker entry beside `here` (this package's own module URL).
 *
 * - Built (`dist/core/pool/*.js`): `worker.js` is plain JS; nothing else is needed.
 * - Sources (`src/core/pool/*.ts`, under vitest or tsx): the entry is `worker.ts`. Node 20 does not
 *   apply loader hooks from a worker's `execArgv: ['--import', 'tsx']` to the worker's entry
 *   module itself (measured on 20.20: ERR_UNKNOWN_FILE_EXTENSION), so the worker starts from a
 *   two-line data: module that registers tsx, then imports `worker.ts`. vitest's own transform
 *   does not reach worker threads, hence tsx there too.
 */
export function workerEntry(here: string): WorkerEntry {
  if (!here.endsWith('.ts')) {
    return { url: new URL('./worker.js', here), toolsModule: new URL('../../tools/index.js', here) };
  }
  const tsxApi = tsxEsmApi(here);
  const entry = new URL('./worker.ts', here).href;
  const code = `import { register } from ${JSON.stringify(tsxApi)};\nregister();\nawait import(${JSON.stringify(entry)});\n`;
  return {
    url: new URL(`data:text/javascript,${encodeURIComponent(code)}`),
    // Not the parent's flags: a parent started with --import tsx would register tsx twice.
    execArgv: [],
    toolsModule: new URL('../../tools/index.ts', here),
  };
}

/**
 * tsx's ESM register() as a file URL. Read from tsx's `exports` map: require.resolve would
 * pick the `require` condition, whose CommonJS build fails to load its own ESM half in a worker.
 */
function tsxEsmApi(here: string): string {
  const pkgPath = createRequire(here).resolve('tsx/package.json');
  const pkg = JSON.parse(fs.readFileSync(pkgPath, 'utf8')) as { exports?: Record<string, { import?: { default?: string } }> };
  const rel = pkg.exports?.['./esm/api']?.import?.default;
  if (!rel) throw new Error('tsx no longer exports ./esm/api for import: the pool cannot load its TypeScript worker');
  return pathToFileURL(path.join(path.dirname(pkgPath), rel)).href;
}
