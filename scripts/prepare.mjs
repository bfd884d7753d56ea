// npm `prepare`: runs on `npm install` in a git checkout (and for `npx github:…`), so the bin
// finds dist/. Skipped where the compiler is absent (an install with --omit=dev), where dist/
// then has to come from a build elsewhere (the registry tarball ships it).
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
let tsc;
try {
  tsc = require.resolve('typescript/bin/tsc');
} catch {
  process.stderr.write('prepare: typescript is not installed; skipping the build (dist/ must already exist)\n');
  process.exit(0);
}
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
// The MCP Apps views (docs/apps.md): bundled by esbuild, which comes with the dev dependencies.
try {
  require.resolve('esbuild');
} catch {
  process.stderr.write('prepare: esbuild is not installed; skipping the views (dist/views must already exist)\n');
  process.exit(0);
}
execFileSync(process.execPath, [new URL('./build-views.mjs', import.meta.url).pathname], { stdio: 'inherit' });
