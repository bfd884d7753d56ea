// Builds the MCP Apps views (src/views/<name>/main.ts + shared/ and their CSS) into one
// self-contained HTML document each, dist/views/<name>.html: the script and the styles inline,
// no reference to anything outside the document (the hosts' default CSP blocks it). Run by
// `npm run build` and by `npm install` (scripts/prepare.mjs). `node scripts/build-views.mjs [outDir]`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(root, 'src', 'views');

/**
 * zod 4 re-exports every locale as a namespace, which no bundler can shake: half of a view's
 * bytes. The views (and the App SDK's schemas) speak English only.
 */
const englishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /locales\/index\.js$/ }, (a) => (a.importer.includes(`${path.sep}zod${path.sep}`) ? { path: 'zod-locales', namespace: 'zod-english-only' } : undefined));
    b.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, () => ({
      contents: `export { default as en } from ${JSON.stringify(path.join(root, 'node_modules', 'zod', 'v4', 'locales', 'en.js'))};`,
      resolveDir: root,
    }));
  },
};

/** The view names: every folder of src/views with a main.ts. */
export function viewNames() {
  return fs
    .readdirSync(SRC, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(SRC, d.name, 'main.ts')))
    .map((d) => d.name)
    .sort();
}

/** Builds every view into `outDir`; returns {name: bytes}. */
export async function buildViews(outDir = path.join(root, 'dist', 'views')) {
  const { build } = await import('esbuild');
  fs.mkdirSync(outDir, { recursive: true });
  const sizes = {};
  const baseCss = fs.readFileSync(path.join(SRC, 'shared', 'base.css'), 'utf8');
  for (const name of viewNames()) {
    const dir = path.join(SRC, name);
    const out = await build({
      entryPoints: [path.join(dir, 'main.ts')],
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'browser',
      target: 'es2022',
      write: false,
      legalComments: 'none',
      plugins: [englishOnly],
      absWorkingDir: root,
    });
    // An inline script ends at the first `</script`: written `<\/script` inside the code instead.
    const js = out.outputFiles[0].text.replace(/<\/(script)/gi, '<\\/$1');
    const ownCss = path.join(dir, 'style.css');
    const css = baseCss + (fs.existsSync(ownCss) ? fs.readFileSync(ownCss, 'utf8') : '');
    const title = name === 'qrcode' ? 'QR code' : name.charAt(0).toUpperCase() + name.slice(1);
    const html =
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
      `<title>devtoolbox · ${title}</title><style>${css.replace(/<\/(style)/gi, '<\\/$1')}</style></head>` +
      `<body><main id="app" aria-live="polite"><p class="muted">Waiting for the tool result…</p></main><script type="module">${js}</script></body></html>\n`;
    fs.writeFileSync(path.join(outDir, `${name}.html`), html);
    sizes[name] = Buffer.byteLength(html);
  }
  return sizes;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const sizes = await buildViews(process.argv[2] ? path.resolve(process.argv[2]) : undefined);
  for (const [name, bytes] of Object.entries(sizes)) process.stderr.write(`views: ${name}.html ${bytes} bytes\n`);
}
