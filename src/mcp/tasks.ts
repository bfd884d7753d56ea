/**
 * The MCP Tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28 era only) over the core's
 * tasks (src/core/tasks): `resultType: "task"` from `tools/call` for a client that declared the
 * extension on that request, for tools that declare `longRunning`; `tasks/get`, `tasks/update`,
 * `tasks/cancel`. The validation ladder (./modern-ladder.ts) and the dispatcher (./dispatch.ts)
 * call this module after their own rungs (envelope, versions, method, headers). docs/tasks.md and
 * docs/mcp-2026-07-28.md Part 2.
 */
import type { CallHeaders, CallOutcome } from '../core/call.js';
import { PollTooFast, type StoredOutcome, type TaskManager, type TaskView } from '../core/tasks/index.js';
import type { AnyTool, Caller } from '../registry.js';
import { isObject, META_CLIENT_CAPABILITIES, RPC, rpcError, type Id, type Json } from './wire.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** The methods of the extension (`tasks/result` and `tasks/list` were removed: -32601). */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** One answer, as the dispatcher's Reply. */
export interface TaskReply {
  status: number;
  body: string;
  headers?: CallHeaders;
}

/** Whether the request declared the extension in its per-request client capabilities. */
export function declaresTasks(params: Json): boolean {
  const meta = params._meta;
  if (!isObject(meta)) return false;
  const caps = meta[META_CLIENT_CAPABILITIES];
  return isObject(caps) && isObject(caps.extensions) && isObject(caps.extensions[TASKS_EXTENSION]);
}

/** The CallToolResult of a stored outcome: what `tools/call` would have answered (the contract's isError shape for errors). */
export function storedCallResult(o: StoredOutcome): Json {
  if (!o.ok) return { resultType: 'complete', isError: true, content: [{ type: 'text', text: JSON.stringify({ error: o.error }) }] };
  const text = JSON.stringify(o.json);
  return { resultType: 'complete', content: [...(o.content ?? []), { type: 'text', text }], structuredContent: o.json };
}

/** The Task fields of a view (the extension's names). */
function taskFields(t: TaskView): Json {
  const f: Json = { taskId: t.taskId, status: t.status };
  if (t.statusMessage !== undefined) f.statusMessage = t.statusMessage;
  f.createdAt = t.createdAt;
  f.lastUpdatedAt = t.lastUpdatedAt;
  f.ttlMs = t.ttlMs;
  f.pollIntervalMs = t.pollIntervalMs;
  return f;
}

export class McpTasks {
  constructor(
    readonly tasks: TaskManager,
    /** `_meta` of every result (server info), as JSON. */
    readonly metaJson: string,
  ) {}

  /** Whether this tools/call is answered with a task: the client declared the extension here, and the tool may run long. */
  wantsTask(params: Json, tool: AnyTool): boolean {
    return tool.longRunning === true && declaresTasks(params);
  }

  /** Params of tasks/* (-32602 in-band), or undefined when they are well-formed. */
  params(id: Id, method: string, params: Json): TaskReply | undefined {
    if (typeof params.taskId !== 'string' || params.taskId === '') return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.taskId must be a non-empty string') };
    if (method === 'tasks/update' && params.inputResponses !== undefined && !isObject(params.inputResponses)) {
      return { status: 200, body: rpcError(id, RPC.InvalidParams, 'Invalid params: params.inputResponses must be an object') };
    }
    return undefined;
  }

  /** -32021 (HTTP 400) for a tasks/* request from a client that did not declare the extension on it. */
  capability(id: Id, params: Json): TaskReply | undefined {
    if (declaresTasks(params)) return undefined;
    return {
      status: 400,
      body: rpcError(id, RPC.MissingRequiredClientCapability, `Missing required client capability: declare the ${TASKS_EXTENSION} extension in _meta["${META_CLIENT_CAPABILITIES}"].extensions to use tasks`, {
        requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
      }),
    };
  }

  /**
   * A tools/call answered with a task (CreateTaskResult), or — when the call ended before it
   * got going (refused, bad input) — with `sync`, the dispatcher's ordinary answer of the outcome.
   */
  async call<R>(id: Id, caller: Caller, tool: AnyTool, args: unknown, sync: (out: CallOutcome) => R): Promise<TaskReply | R> {
    const r = await this.tasks.create(caller, tool, args);
    if (r.kind === 'done') return sync(r.outcome);
    const body = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify({ resultType: 'task', ...taskFields(r.task) }).slice(0, -1)},"_meta":${this.metaJson}}}`;
    return r.headers ? { status: 200, body, headers: r.headers } : { status: 200, body };
  }

  /**
   * tasks/get, tasks/update, tasks/cancel (checked: params well-formed, extension declared). The
   * errors of this request name `requestId`; a failed task's stored error is the task's, not this request's.
   */
  async run(id: Id, method: string, params: Json, caller: Caller, requestId?: string): Promise<TaskReply> {
    const taskId = params.taskId as string;
    try {
      this.tasks.poll(caller);
    } catch (err) {
      if (!(err instanceof PollTooFast)) throw err;
      const s = Math.max(1, Math.ceil(err.retryAfterMs / 1000));
      return {
        status: 429,
        body: rpcError(id, RPC.InvalidRequest, `Polling too fast: at most ${this.tasks.options.poll.perSecond} task requests per second (burst ${this.tasks.options.poll.burst}); retry in ${s} s`, {
          retryAfterMs: err.retryAfterMs,
        }, requestId),
        headers: { 'Retry-After': String(s) },
      };
    }
    const notFound = (): TaskReply => ({ status: 200, body: rpcError(id, RPC.InvalidParams, `Failed to retrieve task: Task not found (unknown, expired, or not yours): ${taskId.slice(0, 100)}`, undefined, requestId) });
    const ack = (): TaskReply => ({ status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"resultType":"complete","_meta":${this.metaJson}}}` });
    switch (method) {
      case 'tasks/get': {
        const t = await this.tasks.get(caller, taskId);
        if (!t) return notFound();
        const result: Json = { resultType: 'complete', ...taskFields(t) };
        if (t.status === 'completed') {
          const o = await this.tasks.outcome(caller, taskId);
          if (!o) return notFound();
          result.result = storedCallResult(o);
        } else if (t.status === 'failed' && t.error) result.error = t.error;
        return { status: 200, body: `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(result).slice(0, -1)},"_meta":${this.metaJson}}}` };
      }
      case 'tasks/cancel':
        return (await this.tasks.cancel(caller, taskId)) ? ack() : notFound();
      case 'tasks/update':
        // We never ask for input: responses to keys never issued are ignored, as the spec says.
        return (await this.tasks.get(caller, taskId)) ? ack() : notFound();
      default:
        return { status: 404, body: rpcError(id, RPC.MethodNotFound, `Method not found: ${method}`, undefined, requestId) };
    }
  }
}
