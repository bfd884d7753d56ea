/**
 * seo_check's and meta_extract's view: a score gauge and grade, the issues grouped by severity
 * with their codes, and the page's search-result and social-card previews as text (the frame
 * fetches nothing: an OG image is named by its URL, not loaded). seo_check's result has no title
 * or description, so the view asks meta_extract for them (an app-initiated tools/call).
 */
import { errorOf, h, root, showError, startView, type ToolResult } from '../shared/app.js';

interface Issue {
  severity: 'error' | 'warning' | 'info';
  code: string;
  message: string;
}
interface Meta {
  url?: string;
  title?: string | null;
  description?: string | null;
  image?: string | null;
  og?: Record<string, string>;
  twitter?: Record<string, string>;
  seo?: { score: number; issues?: Issue[] };
}
interface Check {
  url: string;
  score: number;
  grade?: string;
  issues?: Issue[];
  checks?: Array<{ id: string; passed: boolean; message: string; weight: number; points: number }>;
}

const app = startView('seo', { result: (r) => void render(r) });

async function render(r: ToolResult): Promise<void> {
  const err = errorOf(r);
  if (err) return showError(err);
  const s = (r.structuredContent ?? {}) as Check & Meta;
  // seo_check carries `score` at the top; meta_extract under `seo`.
  const tool = typeof s.score === 'number' ? 'seo_check' : 'meta_extract';
  const score = tool === 'seo_check' ? s.score : (s.seo?.score ?? 0);
  const issues = (tool === 'seo_check' ? s.issues : s.seo?.issues) ?? [];
  const el = root();
  const previews = h('section', { id: 'previews' }, h('p', { class: 'muted' }, 'Loading the page’s title and description…'));
  el.append(
    h('div', { class: 'row', style: 'gap:16px;align-items:center' },
      gauge(score, s.grade ?? grade(score)),
      h('div', {}, h('h1', {}, 'SEO report'), h('div', { class: 'mono muted', id: 'url' }, s.url ?? ''), h('div', { class: 'muted' }, `${issues.length} issue${issues.length === 1 ? '' : 's'}`)),
    ),
    issueList(issues),
    previews,
  );
  let meta: Meta = s;
  if (tool === 'seo_check') {
    try {
      const m = await app.callServerTool({ name: 'meta_extract', arguments: { url: s.url, format: 'full' } });
      meta = m.isError ? {} : ((m.structuredContent ?? {}) as Meta);
    } catch {
      meta = {};
    }
  }
  previews.replaceChildren(...previewCards(meta, s.url ?? ''));
}

function grade(score: number): string {
  return score >= 90 ? 'A' : score >= 80 ? 'B' : score >= 70 ? 'C' : score >= 60 ? 'D' : 'F';
}

/** A ring filled to the score, the grade in the middle (SVG: no image is fetched). */
function gauge(score: number, g: string): Element {
  const colour = score >= 80 ? 'var(--ok)' : score >= 60 ? 'var(--warn)' : 'var(--bad)';
  const c = 2 * Math.PI * 42;
  const svg = `<svg viewBox="0 0 100 100" width="110" height="110" role="img" aria-label="Score ${score} of 100, grade ${g}"><circle cx="50" cy="50" r="42" fill="none" stroke="var(--line)" stroke-width="10"/><circle cx="50" cy="50" r="42" fill="none" stroke="${colour}" stroke-width="10" stroke-linecap="round" stroke-dasharray="${((c * score) / 100).toFixed(1)} ${c.toFixed(1)}" transform="rotate(-90 50 50)"/><text x="50" y="48" text-anchor="middle" font-size="26" font-weight="700" fill="currentColor">${score}</text><text x="50" y="70" text-anchor="middle" font-size="14" fill="currentColor">grade ${g}</text></svg>`;
  const box = h('div', { id: 'gauge', 'data-score': score, 'data-grade': g });
  // Numbers and a one-letter grade only: nothing from the page goes into this markup.
  box.innerHTML = svg;
  return box;
}

function issueList(issues: Issue[]): Element {
  if (issues.length === 0) return h('p', { id: 'issues', class: 'card' }, 'No issues found.');
  const groups = (['error', 'warning', 'info'] as const).map((sev) => ({ sev, list: issues.filter((i) => i.severity === sev) })).filter((g) => g.list.length > 0);
  return h('section', { id: 'issues', class: 'card' },
    ...groups.map((g) =>
      h('div', { class: `group-${g.sev}` },
        h('h2', { class: `sev-${g.sev}` }, `${g.sev === 'error' ? 'Errors' : g.sev === 'warning' ? 'Warnings' : 'Info'} (${g.list.length})`),
        h('ul', {}, ...g.list.map((i) => h('li', { class: 'issue' }, h('code', { class: `badge sev-${g.sev}` }, i.code), ' ', i.message))),
      ),
    ),
  );
}

/** Search-result and social-card previews, as text. */
function previewCards(m: Meta, url: string): Element[] {
  const og = m.og ?? {};
  const tw = m.twitter ?? {};
  const title = m.title ?? og.title ?? '(no title)';
  const description = m.description ?? og.description ?? '(no description)';
  const image = og.image ?? tw.image ?? m.image ?? null;
  let host = url;
  try {
    host = new URL(m.url ?? url).host;
  } catch {
    /* as given */
  }
  return [
    h('div', { class: 'card', id: 'search-preview' },
      h('h2', {}, 'Search result'),
      h('div', { class: 'muted mono' }, host),
      h('div', { style: 'color:var(--accent);font-size:17px' }, cut(title, 60)),
      h('div', {}, cut(description, 160)),
    ),
    h('div', { class: 'card', id: 'social-preview' },
      h('h2', {}, 'Social card'),
      h('dl', {},
        h('dt', {}, 'Title'), h('dd', {}, og.title ?? tw.title ?? title),
        h('dt', {}, 'Description'), h('dd', {}, og.description ?? tw.description ?? description),
        h('dt', {}, 'Image'), h('dd', { class: 'mono' }, image ?? '(none)'),
        h('dt', {}, 'Card'), h('dd', {}, tw.card ?? '(none)'),
      ),
    ),
  ];
}

function cut(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
