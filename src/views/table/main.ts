/**
 * file_process's view: parsed rows as a sortable, paged table; an analysis as one card per column
 * (type, nulls, distinct values, min/max/mean or top values); converted or generated content as
 * text, with its rows (the view asks file_process to parse what was produced).
 */
import { errorOf, h, root, showError, startView, type ToolResult } from '../shared/app.js';

type Cell = string | number | boolean | null;
interface Profile {
  name: string;
  type: string;
  nullCount: number;
  uniqueCount: number;
  stats: Record<string, unknown> | null;
}
interface Out {
  action: 'parse' | 'analyze' | 'convert' | 'generate';
  format?: string;
  from?: string;
  to?: string;
  columns?: string[] | Profile[];
  rows?: Array<Record<string, Cell>>;
  content?: string;
  rowCount: number;
}

const PAGE = 20;
let args: Record<string, unknown> = {};
const app = startView('table', { input: (a) => (args = a), result: (r) => void render(r) });

async function render(r: ToolResult): Promise<void> {
  const err = errorOf(r);
  if (err) return showError(err);
  const o = r.structuredContent as unknown as Out;
  const el = root();
  const head = h('h1', {}, title(o));
  if (o.action === 'analyze') return void el.append(head, cards((o.columns ?? []) as Profile[]));
  if (o.action === 'parse') return void el.append(head, table((o.columns ?? []) as string[], o.rows ?? []));
  // convert / generate: the text produced, and its rows read back.
  const slot = h('div', {}, h('p', { class: 'muted' }, 'Reading the rows…'));
  el.append(head, slot, h('details', { id: 'content' }, h('summary', {}, `The ${o.to ?? o.format ?? ''} content`), h('pre', { class: 'mono', style: 'white-space:pre-wrap;max-height:320px;overflow:auto' }, o.content ?? '')));
  try {
    const parsed = await app.callServerTool({ name: 'file_process', arguments: { action: 'parse', content: o.content ?? '', format: o.to ?? o.format ?? 'auto', encoding: args.encoding ?? 'utf-8' } });
    const p = parsed.structuredContent as unknown as Out | undefined;
    slot.replaceChildren(parsed.isError || !p ? h('p', { class: 'muted' }, 'The content could not be read back as rows.') : table((p.columns ?? []) as string[], p.rows ?? []));
  } catch (e) {
    slot.replaceChildren(h('p', { class: 'error' }, e instanceof Error ? e.message : String(e)));
  }
}

function title(o: Out): string {
  switch (o.action) {
    case 'parse':
      return `${o.rowCount} row${o.rowCount === 1 ? '' : 's'} parsed from ${o.format?.toUpperCase() ?? ''}`;
    case 'analyze':
      return `${o.rowCount} rows, ${(o.columns ?? []).length} columns analysed (${o.format?.toUpperCase() ?? ''})`;
    case 'convert':
      return `${o.rowCount} rows converted from ${o.from?.toUpperCase()} to ${o.to?.toUpperCase()}`;
    default:
      return `${o.rowCount} rows written as ${o.format?.toUpperCase() ?? ''}`;
  }
}

/** A table sorted by clicking a column heading (again: the other way), paged by PAGE rows. */
function table(columns: string[], rows: Array<Record<string, Cell>>): Element {
  let sortBy: string | undefined;
  let desc = false;
  let page = 0;
  const box = h('div', { id: 'table' });
  const draw = () => {
    const sorted = sortBy === undefined ? rows : [...rows].sort((a, b) => compare(a[sortBy!] ?? null, b[sortBy!] ?? null) * (desc ? -1 : 1));
    const pages = Math.max(1, Math.ceil(sorted.length / PAGE));
    page = Math.min(page, pages - 1);
    const shown = sorted.slice(page * PAGE, page * PAGE + PAGE);
    box.replaceChildren(
      h('div', { style: 'overflow:auto' },
        h('table', {},
          h('thead', {}, h('tr', {}, ...columns.map((c) =>
            h('th', { scope: 'col', 'aria-sort': sortBy === c ? (desc ? 'descending' : 'ascending') : 'none' },
              h('button', { class: 'sort', style: 'border:0;background:none;padding:0;font-weight:600', onclick: () => ((desc = sortBy === c ? !desc : false), (sortBy = c), (page = 0), draw()) }, c, sortBy === c ? (desc ? ' ▼' : ' ▲') : ''))))),
          h('tbody', {}, ...shown.map((r) => h('tr', {}, ...columns.map((c) => h('td', { class: typeof r[c] === 'number' ? 'mono' : undefined }, show(r[c] ?? null)))))),
        ),
      ),
      h('div', { class: 'row' },
        h('button', { id: 'prev', disabled: page === 0, onclick: () => (page--, draw()) }, '‹ Previous'),
        h('span', { id: 'page-info', class: 'muted' }, sorted.length === 0 ? 'No rows' : `Rows ${page * PAGE + 1}–${page * PAGE + shown.length} of ${sorted.length}`),
        h('button', { id: 'next', disabled: page >= pages - 1, onclick: () => (page++, draw()) }, 'Next ›'),
      ),
    );
  };
  draw();
  return box;
}

/** Nulls last; numbers as numbers; everything else as text in the viewer's collation. */
function compare(a: Cell, b: Cell): number {
  if (a === null || b === null) return a === b ? 0 : a === null ? 1 : -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, { numeric: true });
}

function show(v: Cell): string {
  return v === null ? '∅' : String(v);
}

function cards(profiles: Profile[]): Element {
  return h('div', { class: 'grid', id: 'cards' }, ...profiles.map((p) =>
    h('div', { class: 'card column-card' },
      h('h2', {}, p.name),
      h('dl', {},
        h('dt', {}, 'Type'), h('dd', { class: 'type' }, p.type),
        h('dt', {}, 'Nulls'), h('dd', { class: 'nulls' }, p.nullCount),
        h('dt', {}, 'Distinct'), h('dd', {}, p.uniqueCount),
        ...stats(p.stats),
      ),
    ),
  ));
}

function stats(s: Record<string, unknown> | null): Element[] {
  if (!s) return [];
  const out: Element[] = [];
  const num = (v: unknown) => (typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(3).replace(/0+$/, '')) : String(v));
  for (const k of ['min', 'max', 'mean', 'median', 'stddev', 'sum', 'minLength', 'maxLength', 'trueCount', 'falseCount'] as const) {
    if (k in s) out.push(h('dt', {}, k), h('dd', { class: `stat-${k} mono` }, num(s[k])));
  }
  if (Array.isArray(s.top)) out.push(h('dt', {}, 'top'), h('dd', {}, (s.top as Array<{ value: Cell; count: number }>).map((t) => `${show(t.value)} (${t.count})`).join(', ')));
  return out;
}
