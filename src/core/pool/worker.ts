/**
 * A pool worker: looks tools up by name, runs them through the same invokeTool() as the main
 * thread, and posts back the checked result or the ToolError's parts. One job at a time; the
 * pool cancels a job by terminating the whole worker, so nothing here watches a signal.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ToolError } from '../../errors.js';
import { invokeTool } from '../../invoke.js';
import type { Logger } from '../../log.js';
import type { AnyTool, ToolContext } from '../../registry.js';
import type { Services } from '../../services.js';
import type { ErrorParts, ResultParts, RunMessage, WorkerData, WorkerMessage } from './protocol.js';

const port = parentPort!;
const data = workerData as WorkerData;

function post(m: WorkerMessage, transfer: Transferable[] = []): void {
  port.postMessage(m, transfer as never);
}

function sendLog(level: 'debug' | 'info' | 'warn' | 'error', msg: string, extra?: unknown): void {
  try {
    post({ type: 'log', level, msg, extra });
  } catch {
    // Not cloneable (a function, a class with private state…): its text is enough for a log line.
    post({ type: 'log', level, msg, extra: extra instanceof Error ? (extra.stack ?? extra.message) : String(extra) });
  }
}

const log: Logger = {
  debug: (m, e) => sendLog('debug', m, e),
  info: (m, e) => sendLog('info', m, e),
  warn: (m, e) => sendLog('warn', m, e),
  error: (m, e) => sendLog('error', m, e),
};

/**
 * Pooled tools are pure: they get config, clock and log. A handler that reaches for anything
 * else (store, fetcher, auth …) is a bug, and says so instead of reading undefined.
 */
const plain = { config: data.config, clock: { now: () => Date.now() }, log, closers: [] };
const services = new Proxy(plain, {
  get(target, prop) {
    if (prop in target) return target[prop as keyof typeof target];
    if (prop === 'then' || typeof prop === 'symbol') return undefined;
    throw new Error(`services.${prop} is not available to a tool running in the worker pool`);
  },
}) as unknown as Services;

const { allTools } = (await import(data.toolsModule)) as { allTools: AnyTool[] };
const tools = new Map(allTools.map((t) => [t.name, t]));
// Never aborted: the pool cancels a job by terminating this thread.
const neverAborted = new AbortController().signal;

function errorParts(err: ToolError): ErrorParts {
  const parts: ErrorParts = { code: err.code, message: err.message };
  if (err.details !== undefined) parts.details = err.details;
  if (err.headers !== undefined) parts.headers = err.headers;
  return parts;
}

/** A body view that owns its whole buffer can be moved; any other (pooled Buffers) is copied first. */
function movable(data: Uint8Array): Uint8Array {
  const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer;
  return whole ? data : new Uint8Array(data);
}

async function run(m: RunMessage): Promise<void> {
  const tool = tools.get(m.tool);
  let result: ResultParts;
  try {
    if (!tool) {
      log.error(`the worker pool has no tool named ${JSON.stringify(m.tool)}`);
      throw new ToolError('INTERNAL', 'Internal error');
    }
    const ctx: ToolContext = {
      caller: m.caller,
      services,
      signal: neverAborted,
      progress: async (progress, total, message) => {
        post({ type: 'progress', id: m.id, progress, ...(total === undefined ? {} : { total }), ...(message === undefined ? {} : { message }) });
      },
    };
    const rich = await invokeTool(tool, m.input, ctx);
    result = { json: rich.json };
    if (rich.content) result.content = rich.content;
    if (rich.body) result.body = { ...rich.body, data: movable(rich.body.data) };
  } catch (err) {
    // invokeTool throws ToolError only.
    const e = err instanceof ToolError ? err : new ToolError('INTERNAL', 'Internal error');
    try {
      post({ type: 'done', id: m.id, ok: false, error: errorParts(e) });
    } catch {
      // details that do not clone: their JSON form is what any transport would send anyway.
      post({ type: 'done', id: m.id, ok: false, error: { ...errorParts(e), details: JSON.parse(JSON.stringify(e.details ?? null)) } });
    }
    return;
  }
  try {
    post({ type: 'done', id: m.id, ok: true, result }, result.body ? [result.body.data.buffer] : []);
  } catch (err) {
    log.error(`the result of ${m.tool} cannot be sent to the main thread`, err);
    post({ type: 'done', id: m.id, ok: false, error: { code: 'INTERNAL', message: 'Internal error' } });
  }
}

port.on('message', (m: RunMessage) => void run(m));
post({ type: 'ready' });
