/**
 * The REST face of tasks (docs/tasks.md): `Prefer: respond-async` on a long-running tool's call
 * → 202 with `Location: /api/tasks/{id}`; `GET /api/tasks/{id}` (status, progress, the result
 * when done), `GET /api/tasks/{id}/result` (exactly the answer the synchronous call would have
 * given: JSON or the bytes), `DELETE /api/tasks/{id}` (cancel). Translates only: the work is
 * src/core/tasks.
 */
import type { Context, Hono } from 'hono';
import type { CallOutcome } from '../core/call.js';
import type { RouteKit } from './kit.js';
import { PollTooFast, toStored, type StoredOutcome, type TaskManager, type TaskView } from '../core/tasks/index.js';
import { ERROR_STATUS, ToolError } from '../errors.js';
import { restBindings, type AnyTool, type Registry } from '../registry.js';

/** Whether a request's `Prefer` header asks for an asynchronous answer (RFC 7240 `respond-async`). */
export function prefersAsync(prefer: string | undefined): boolean {
  if (!prefer) return false;
  return prefer.split(',').some((p) => p.split(';')[0]!.trim().toLowerCase() === 'respond-async');
}

const taskPath = (id: string) => `/api/tasks/${id}`;

function setAll(res: Response, headers: Readonly<Record<string, string>> | undefined): Response {
  if (headers) for (const k in headers) res.headers.set(k, headers[k]!);
  return res;
}

/** The response of a synchronous call for an outcome (what `POST /api/<tool>` answers). */
function outcomeResponse(c: Context, kit: RouteKit, successStatus: number, o: StoredOutcome): Response {
  if (!o.ok) return kit.errorResponse(c, new ToolError(o.error.code, o.error.message, o.error.details, o.headers));
  if (o.body) {
    return new Response(Buffer.from(o.body.base64, 'base64'), { status: successStatus, headers: { 'content-type': o.body.contentType, ...o.body.headers } });
  }
  return c.json({ success: true, ...o.json }, successStatus as 200);
}

function successStatusOf(tool: AnyTool | undefined): number {
  return (tool && restBindings(tool)[0]?.status) ?? 200;
}

/**
 * A long-running tool's REST call with `Prefer: respond-async`: 202 + Location when a task was
 * created; the ordinary answer when the call ended before it got going (refused, bad input).
 */
export async function respondAsync(c: Context, kit: RouteKit, tasks: TaskManager, who: Parameters<TaskManager['create']>[0], tool: AnyTool, successStatus: number, input: unknown): Promise<Response> {
  const r = await tasks.create(who, tool, input);
  if (r.kind === 'done') return syncAnswer(c, kit, successStatus, r.outcome);
  const body = { success: true, ...restView(r.task) };
  const res = c.json(body, 202, {
    Location: taskPath(r.task.taskId),
    'Retry-After': String(Math.max(1, Math.round(r.task.pollIntervalMs / 1000))),
    'Preference-Applied': 'respond-async',
  });
  return setAll(res, r.headers);
}

function syncAnswer(c: Context, kit: RouteKit, successStatus: number, out: CallOutcome): Response {
  const res = outcomeResponse(c, kit, successStatus, toStored(out));
  return setAll(res, out.headers);
}

/** A task as REST shows it (camelCase, as the MCP Task object; `error` in the contract's shape). */
function restView(t: TaskView): Record<string, unknown> {
  const v: Record<string, unknown> = {
    taskId: t.taskId,
    tool: t.tool,
    status: t.status,
    createdAt: t.createdAt,
    lastUpdatedAt: t.lastUpdatedAt,
    ttlMs: t.ttlMs,
    pollIntervalMs: t.pollIntervalMs,
    location: taskPath(t.taskId),
  };
  if (t.statusMessage !== undefined) v.statusMessage = t.statusMessage;
  if (t.progress !== undefined) v.progress = t.progress;
  if (t.error) v.error = { code: 'INTERNAL', message: t.error.message, details: t.error.data };
  if (t.status === 'completed') v.resultUrl = `${taskPath(t.taskId)}/result`;
  return v;
}

/** GET/DELETE /api/tasks/{id} and GET /api/tasks/{id}/result. */
export function mountTaskRoutes(app: Hono, deps: { kit: RouteKit; tasks: TaskManager; registry: Registry }): void {
  const { kit, tasks, registry } = deps;

  const guarded = (fn: (c: Context, who: Awaited<ReturnType<RouteKit['caller']>>, id: string) => Promise<Response>) => async (c: Context) => {
    try {
      const who = await kit.caller(c);
      tasks.poll(who);
      return await fn(c, who, c.req.param('id')!);
    } catch (err) {
      if (err instanceof PollTooFast) {
        const s = String(Math.max(1, Math.ceil(err.retryAfterMs / 1000)));
        return kit.errorResponse(c, new ToolError('RATE_LIMITED', `Polling too fast: at most ${tasks.options.poll.perSecond} task requests per second (burst ${tasks.options.poll.burst}); retry in ${s} s`, { retryAfterMs: err.retryAfterMs }, { 'Retry-After': s }));
      }
      return kit.errorResponse(c, err);
    }
  };
  const notFound = (id: string) => new ToolError('NOT_FOUND', `No task ${id} (unknown, expired, or not yours)`);

  app.get(
    '/api/tasks/:id',
    guarded(async (c, who, id) => {
      const t = await tasks.get(who, id);
      if (!t) throw notFound(id);
      const body: Record<string, unknown> = { success: true, ...restView(t) };
      if (t.status === 'completed') {
        const o = await tasks.outcome(who, id);
        const tool = registry.get(t.tool);
        if (o && !o.ok) {
          body.resultStatus = ERROR_STATUS[o.error.code];
          body.result = { success: false, error: o.error };
        } else if (o?.ok && o.body) {
          body.resultStatus = successStatusOf(tool);
          body.resultContentType = o.body.contentType;
          body.resultBytes = Buffer.byteLength(o.body.base64, 'base64');
        } else if (o?.ok) {
          body.resultStatus = successStatusOf(tool);
          body.result = { success: true, ...o.json };
        }
      }
      const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
      if (t.status === 'working') headers['Retry-After'] = String(Math.max(1, Math.round(t.pollIntervalMs / 1000)));
      return c.json(body, 200, headers);
    }),
  );

  app.get(
    '/api/tasks/:id/result',
    guarded(async (c, who, id) => {
      const t = await tasks.get(who, id);
      if (!t) throw notFound(id);
      if (t.status !== 'completed') throw new ToolError('CONFLICT', `Task ${id} is ${t.status}: it has no result${t.status === 'working' ? ' yet' : ''}`, { status: t.status });
      const o = await tasks.outcome(who, id);
      if (!o) throw notFound(id);
      const res = outcomeResponse(c, kit, successStatusOf(registry.get(t.tool)), o);
      res.headers.set('Cache-Control', 'no-store');
      return res;
    }),
  );

  app.delete(
    '/api/tasks/:id',
    guarded(async (c, who, id) => {
      if (!(await tasks.cancel(who, id))) throw notFound(id);
      const t = await tasks.get(who, id);
      if (!t) throw notFound(id);
      return c.json({ success: true, ...restView(t) }, 200, { 'Cache-Control': 'no-store' });
    }),
  );
}
