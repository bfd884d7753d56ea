import { describe, expect, it } from 'vitest';
import { workerEntry } from './worker-entry.js';

describe('workerEntry', () => {
  it('runs dist/ as plain JavaScript beside the pool', () => {
    expect(workerEntry('file:///srv/app/dist/core/pool/pool.js')).toStrictEqual({
      url: new URL('file:///srv/app/dist/core/pool/worker.js'),
      toolsModule: new URL('file:///srv/app/dist/tools/index.js'),
    });
  });

  it('runs the sources through a data: module that registers tsx first, without the parent flags', () => {
    const e = workerEntry(new URL('./pool.ts', import.meta.url).href);
    expect(e.url.protocol).toBe('data:');
    const code = decodeURIComponent(e.url.href.slice('data:text/javascript,'.length));
    expect(code).toMatch(/^import \{ register \} from "file:\/\/\/.*\/node_modules\/tsx\/dist\/esm\/api\/index\.mjs";\nregister\(\);\n/);
    expect(code).toContain(`await import(${JSON.stringify(new URL('./worker.ts', import.meta.url).href)});`);
    expect(e.execArgv).toStrictEqual([]);
    expect(e.toolsModule).toStrictEqual(new URL('../../tools/index.ts', import.meta.url));
  });
});
