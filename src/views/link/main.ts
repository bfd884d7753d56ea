/**
 * url_stats's view: the short link, where it goes, its clicks and last click, with a refresh (an
 * app-initiated url_stats). For the owner's links also the visit analytics: visits per day as
 * a bar chart (inline SVG), top referrers, browsers, systems and devices, and bots apart. Fields
 * this view does not know (what a later version adds) are listed as they come, so nothing in the
 * result is hidden.
 */
import { errorOf, h, root, showError, startView, when, type ToolResult } from '../shared/app.js';

interface Count {
  visits: number;
  name?: string;
  host?: string;
  type?: string;
}

interface Stats {
  code: string;
  url: string;
  shortUrl: string;
  clicks: number;
  createdAt: string;
  lastClickedAt: string | null;
  from?: string;
  to?: string;
  visits?: { byDay: { day: string; visits: number }[]; byHour: { hour: string; visits: number }[] };
  referrers?: Count[];
  browsers?: Count[];
  os?: Count[];
  devices?: Count[];
  bots?: { visits: number; names: Count[] };
  [more: string]: unknown;
}
const KNOWN = new Set(['code', 'url', 'shortUrl', 'clicks', 'createdAt', 'lastClickedAt', 'from', 'to', 'visits', 'referrers', 'browsers', 'os', 'devices', 'bots']);
const SVG = 'http://www.w3.org/2000/svg';

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
    ...(s.visits ? analytics(s, s.visits) : []),
  );
}

/** The owner's analytics: the day chart, then the top lists side by side. */
function analytics(s: Stats, visits: NonNullable<Stats['visits']>): HTMLElement[] {
  const total = visits.byDay.reduce((n, d) => n + d.visits, 0);
  return [
    h('section', { class: 'card', id: 'days' },
      h('h2', {}, `Visits per day: ${total} from ${s.from ?? visits.byDay[0]?.day ?? ''} to ${s.to ?? visits.byDay.at(-1)?.day ?? ''} (UTC)`),
      dayChart(visits.byDay),
    ),
    h('div', { class: 'grid' },
      top('referrers', 'Referrers', s.referrers ?? [], (c) => c.host ?? ''),
      top('browsers', 'Browsers', s.browsers ?? [], (c) => c.name ?? ''),
      top('os', 'Systems', s.os ?? [], (c) => c.name ?? ''),
      top('devices', 'Devices', s.devices ?? [], (c) => c.type ?? ''),
    ),
    h('section', { class: 'card', id: 'bots' },
      h('h2', {}, 'Bots ', h('span', { class: 'muted' }, '(crawlers and link previews, not counted as clicks)')),
      h('div', { id: 'bot-visits', style: 'font-size:20px;font-weight:700' }, s.bots?.visits ?? 0),
      list('bot-names', s.bots?.names ?? [], (c) => c.name ?? ''),
    ),
  ];
}

/** Bars per day, scaled to the busiest day; each bar's title gives the day and its count. */
function dayChart(days: { day: string; visits: number }[]): SVGSVGElement {
  const W = 6, H = 80;
  const max = Math.max(1, ...days.map((d) => d.visits));
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('id', 'day-chart');
  svg.setAttribute('viewBox', `0 0 ${days.length * W} ${H}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  svg.setAttribute('style', 'width:100%;height:90px;display:block;background:var(--bg2);border-radius:4px');
  days.forEach((d, i) => {
    const height = d.visits === 0 ? 0 : Math.max(1, (d.visits / max) * (H - 4));
    const bar = document.createElementNS(SVG, 'rect');
    for (const [k, v] of Object.entries({ x: i * W + 1, y: H - height, width: W - 2, height, fill: 'var(--accent)', 'data-day': d.day, 'data-visits': d.visits })) bar.setAttribute(k, String(v));
    const title = document.createElementNS(SVG, 'title');
    title.textContent = `${d.day}: ${d.visits} ${d.visits === 1 ? 'visit' : 'visits'}`;
    bar.append(title);
    svg.append(bar);
  });
  return svg;
}

function top(id: string, title: string, rows: Count[], label: (c: Count) => string): HTMLElement {
  return h('section', { class: 'card' }, h('h2', {}, title), list(id, rows, label));
}

/** Rows as "label … count" with a bar of its share. */
function list(id: string, rows: Count[], label: (c: Count) => string): HTMLElement {
  const max = Math.max(1, ...rows.map((r) => r.visits));
  if (rows.length === 0) return h('div', { id, class: 'muted' }, 'none yet');
  return h('ol', { id, style: 'list-style:none;margin:0;padding:0;display:flex;flex-direction:column;gap:4px' },
    ...rows.map((r) =>
      h('li', { style: 'display:grid;grid-template-columns:1fr auto;gap:2px 8px' },
        h('span', { class: 'mono label', style: 'overflow-wrap:anywhere' }, label(r)),
        h('span', { class: 'count' }, r.visits),
        h('span', { style: `grid-column:1/3;height:3px;border-radius:2px;background:var(--accent);width:${Math.round((r.visits / max) * 100)}%` }),
      ),
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
