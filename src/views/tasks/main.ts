/**
 * The cron tasks view (cron_task_list): an agent's tasks with status, schedule, next runs and the
 * last log entries; report a task done or failed, or delete it, through the existing tools
 * (cron_task_done, cron_task_delete), then list again. The view's calls go through the host with
 * the host's own connection, so they act as the same caller on the same agent.
 */
import type { App } from '@modelcontextprotocol/ext-apps';
import { errorOf, h, root, showError, startView, when, type ToolResult } from '../shared/app.js';

interface Task {
  task_id: string;
  agent_id: string;
  name: string;
  schedule: string;
  timezone: string;
  description?: string | null;
  status: 'scheduled' | 'due' | 'retrying' | 'late' | 'claimed' | 'paused' | 'completed';
  last_status: 'done' | 'failed' | null;
  last_run_at: string | null;
  next_run_at: string;
  run_count: number;
  retry_count: number;
  max_retries: number;
}
interface Log {
  task_id: string;
  status: string;
  message?: string | null;
  created_at: string;
}

let args: Record<string, unknown> = {};
const app: App = startView('tasks', { input: (a) => (args = a), result: (r) => void render(r) });

async function render(r: ToolResult): Promise<void> {
  const err = errorOf(r);
  if (err) return showError(err);
  const { agent_id, tasks } = r.structuredContent as unknown as { agent_id: string; tasks: Task[] };
  const [logs, runs] = await Promise.all([lastLogs(agent_id), nextRuns(tasks)]);
  const el = root();
  el.append(
    h('div', { class: 'row', style: 'justify-content:space-between' },
      h('h1', {}, `Cron tasks of ${agent_id}`, ' ', h('span', { class: 'muted', id: 'count' }, `(${tasks.length})`)),
      h('button', { id: 'refresh', onclick: () => void refresh() }, 'Refresh'),
    ),
    tasks.length === 0 ? h('p', { class: 'muted', id: 'empty' }, 'No tasks.') : h('div', { id: 'tasks', style: 'display:grid;gap:10px' }, ...tasks.map((t) => card(t, logs.get(t.task_id) ?? [], runs.get(`${t.schedule}\0${t.timezone}`)))),
  );
}

function card(t: Task, logs: Log[], runs: string[] | undefined): Element {
  const status = h('span', { class: 'muted status-line' });
  /** Runs one of the task tools, then lists again; a refusal is shown beside the buttons. */
  const perform = async (label: string, run: () => Promise<unknown>) => {
    status.textContent = `${label}…`;
    try {
      const e = errorOf((await run()) as ToolResult);
      if (e) status.textContent = e;
      else await refresh();
    } catch (err) {
      status.textContent = err instanceof Error ? err.message : String(err);
    }
  };
  const act = (label: string, cls: string, run: () => Promise<unknown>) => h('button', { class: cls, onclick: () => void perform(label, run) }, label);
  const del = h('button', { class: 'delete' }, 'Delete');
  // Two steps instead of confirm(): a host's sandbox may not allow dialogs.
  del.addEventListener('click', () => {
    if (del.dataset.armed) return void perform('Deleting', () => call('cron_task_delete', { task_id: t.task_id, agent_id: t.agent_id }));
    del.dataset.armed = '1';
    del.textContent = 'Confirm delete';
  });
  return h('article', { class: 'card task', 'data-task-id': t.task_id },
    h('div', { class: 'row', style: 'justify-content:space-between' },
      h('h2', {}, t.name),
      h('span', { class: `badge st-${t.status} task-status` }, t.status),
    ),
    h('dl', {},
      h('dt', {}, 'Schedule'), h('dd', { class: 'mono' }, `${t.schedule} (${t.timezone})`),
      h('dt', {}, 'Next runs'), h('dd', { class: 'next-runs' }, (runs ?? [t.next_run_at]).map(when).join(' · ')),
      h('dt', {}, 'Runs'), h('dd', { class: 'run-count' }, `${t.run_count}${t.retry_count ? `, retry ${t.retry_count}/${t.max_retries}` : ''}`),
      h('dt', {}, 'Last run'), h('dd', {}, t.last_run_at ? `${when(t.last_run_at)} — ${t.last_status ?? ''}` : 'never'),
    ),
    logs.length === 0
      ? h('p', { class: 'muted logs' }, 'No log entries yet.')
      : h('ul', { class: 'logs' }, ...logs.map((l) => h('li', {}, h('span', { class: `st-${l.status.replace('webhook_', '')}` }, l.status), ` ${when(l.created_at)}`, l.message ? ` — ${l.message}` : ''))),
    h('div', { class: 'row' },
      act('Done', 'done', () => call('cron_task_done', { task_id: t.task_id, agent_id: t.agent_id, status: 'done' })),
      act('Failed', 'failed', () => call('cron_task_done', { task_id: t.task_id, agent_id: t.agent_id, status: 'failed', message: 'Reported failed from the view' })),
      del,
      status,
    ),
  );
}

function call(name: string, a: Record<string, unknown>): Promise<unknown> {
  return app.callServerTool({ name, arguments: a });
}

/** Lists the tasks again with the arguments of the original call. */
async function refresh(): Promise<void> {
  const r = await app.callServerTool({ name: 'cron_task_list', arguments: { ...args } });
  await render(r);
}

/** The last three log entries of each task (one call for the agent). */
async function lastLogs(agent: string): Promise<Map<string, Log[]>> {
  const out = new Map<string, Log[]>();
  try {
    const r = await app.callServerTool({ name: 'cron_task_agent_logs', arguments: { agent_id: agent, limit: 100 } });
    for (const l of ((r.structuredContent as { logs?: Log[] } | undefined)?.logs ?? [])) {
      const list = out.get(l.task_id) ?? [];
      if (list.length < 3) list.push(l);
      out.set(l.task_id, list);
    }
  } catch {
    /* shown as "no log entries" */
  }
  return out;
}

/** The next three runs of each distinct schedule (cron_parse), keyed by schedule and zone. */
async function nextRuns(tasks: Task[]): Promise<Map<string, string[]>> {
  const keys = [...new Set(tasks.map((t) => `${t.schedule}\0${t.timezone}`))].slice(0, 10);
  const out = new Map<string, string[]>();
  await Promise.all(keys.map(async (k) => {
    const [expression, timezone] = k.split('\0') as [string, string];
    try {
      const r = await app.callServerTool({ name: 'cron_parse', arguments: { expression, timezone, count: 3 } });
      const runs = (r.structuredContent as { nextRuns?: string[] } | undefined)?.nextRuns;
      if (runs) out.set(k, runs);
    } catch {
      /* next_run_at alone */
    }
  }));
  return out;
}
