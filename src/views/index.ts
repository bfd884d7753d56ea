/**
 * The MCP Apps views (issue 31): what each one is, and its HTML. The sources live beside this
 * file (`<name>/main.ts`, `shared/`), bundled by scripts/build-views.mjs into one self-contained
 * document each, `dist/views/<name>.html` (run by `npm run build` and by `npm install`'s
 * prepare). A tool names its view with `view: '<name>'` on defineTool; src/mcp/resources.ts
 * serves them as `ui://devtoolbox/<name>` resources. Server-side only: no DOM here.
 */
import fs from 'node:fs';
import path from 'node:path';

/** One view: its name (the `view` of the tools it renders) and how hosts list it. */
export interface ViewInfo {
  readonly name: string;
  readonly title: string;
  readonly description: string;
}

/** Every view, in the order resources/list shows them. */
export const VIEWS: readonly ViewInfo[] = [
  { name: 'qrcode', title: 'QR code', description: 'The QR code at full resolution with its content; download as PNG or SVG; re-render with another size, colour or error-correction level.' },
  { name: 'image', title: 'Converted image', description: 'The converted image beside the input: format, dimensions and bytes of each.' },
  { name: 'seo', title: 'SEO report', description: 'Score gauge and grade, issues grouped by severity with their codes, and the page’s search-result and social-card previews (as text).' },
  { name: 'table', title: 'Table', description: 'Parsed or converted rows as a sortable, paged table; an analysis as one card per column.' },
  { name: 'tasks', title: 'Cron tasks', description: 'An agent’s tasks with status, next runs and the last log entries; report done or failed, or delete, from the view.' },
  { name: 'link', title: 'Short link', description: 'A short link’s clicks and last click.' },
];

/** Where the build writes the views: `<package root>/dist/views` (this file runs from src/views or dist/views alike). */
export const VIEWS_DIR = path.join(import.meta.dirname, '..', '..', 'dist', 'views');

/** The built HTML of a view, or undefined when it has not been built (read once, then kept). */
export function viewHtml(name: string, dir = VIEWS_DIR): string | undefined {
  const key = `${dir}\0${name}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  let html: string;
  try {
    html = fs.readFileSync(path.join(dir, `${name}.html`), 'utf8');
  } catch {
    return undefined; // not built (yet): asked again next time
  }
  cache.set(key, html);
  return html;
}

const cache = new Map<string, string>();
