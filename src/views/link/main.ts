/**
 * url_stats's view: the short link, where it goes, its clicks and last click, with a refresh (an
 * app-initiated url_stats). Fields this view does not know (analytics a later version adds) are
 * listed as they come, so nothing in the result is hidden.
 */
import { errorOf, h, root, showError, startView, when, type ToolResult } from '../shared/app.js';

interface Stats {
  code: string;
  url: string;
  shortUrl: string;
  clicks: number;
  createdAt: string;
  lastClickedAt: string | null;
  [more: string]: unknown;
}
const KNOWN = new Set(['code', 'url', 'shortUrl', 'clicks', 'createdAt', 'lastClickedAt']);

const app = startView('link', { result: render });

function render(r: ToolResult): void {
  const err = errorOf(r);
  if (err) return showError(err);
  const s = r.structuredContent as unknown as Stats;
  const extra = Object.entries(s).filter(([k]) => !KNOWN.has(k));
  root().append(
    h('div', { class: 'row', style: 'justify-content:space-between' },
      h('h1', {}, 'Short link ', h('code', { id: 'code' }, s.code)),
      h('button', { id: 'refresh', onclick: () => void refresh(s.code) }, 'Refresh'),
    ),
    h('div', { class: 'row', style: 'gap:24px;align-items:flex-end' },
      h('div', {}, h('div', { id: 'clicks', style: 'font-size:40px;font-weight:700;line-height:1' }, s.clicks), h('div', { class: 'muted' }, s.clicks === 1 ? 'click' : 'clicks')),
      h('dl', {},
        h('dt', {}, 'Last click'), h('dd', { id: 'last-click' }, s.lastClickedAt ? when(s.lastClickedAt) : 'never'),
        h('dt', {}, 'Created'), h('dd', {}, when(s.createdAt)),
      ),
    ),
    h('dl', { class: 'card' },
      h('dt', {}, 'Short URL'), h('dd', { class: 'mono', id: 'short-url' }, s.shortUrl),
      h('dt', {}, 'Goes to'), h('dd', { class: 'mono', id: 'long-url' }, s.url),
      ...extra.flatMap(([k, v]) => [h('dt', {}, k), h('dd', { class: 'mono' }, typeof v === 'string' ? v : JSON.stringify(v))]),
    ),
  );
}

async function refresh(code: string): Promise<void> {
  try {
    render(await app.callServerTool({ name: 'url_stats', arguments: { code } }));
  } catch (err) {
    showError(err);
  }
}
