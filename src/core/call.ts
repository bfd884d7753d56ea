/**
 * The one call path. Every face (REST, MCP over HTTP, stdio, in-memory tests) hands it a caller,
 * a tool and the raw input, and gets back the result or the error, with the response metadata
 * (limit headers) either way. It knows no transport: translating to HTTP or JSON-RPC is theirs.
 *
 *   admit (limits) → validate input → handler (inline or in the worker pool) → validate output
 *   → error mapping and logging
 */
import { performance } from 'node:perf_hooks';
import { ToolError, toToolError } from '../errors.js';
import { runTool } from '../invoke.js';
import { requestContext } from '../log.js';
import { inSpan } from '../telemetry.js';
import type { AnyTool, Caller, RichResult, ToolContext } from '../registry.js';
import type { Services } from '../services.js';
import { joinHeaders } from '../lib/join-headers.js';

export type ProgressFn = ToolContext['progress'];

/** Runs a `cost: 'cpu'` tool off the main thread (the worker pool implements it). */
export interface OffThreadRunner {
  run(tool: AnyTool, input: unknown, ctx: ToolContext): Promise<RichResult<Record<string, unknown>>>;
}

export interface CallOptions {
  /**
   * Aborted when the caller goes away. A function is read only if the handler asks (reading a
   * node-server request's signal builds a full web Request: measurably slower).
   */
  signal?: AbortSignal | (() => AbortSignal);
  /** Progress reports of the handler; a no-op by default. */
  progress?: ProgressFn;
  /**
   * Receives the response headers as soon as the call is admitted or refused, before the
   * handler runs (a streamed response sends its headers before the result exists).
   */
  onHeaders?: (headers: CallHeaders) => void;
  /** The MCP protocol era of the call (`legacy`, `2026-07-28`), for the metrics; none over REST. */
  era?: string;
}

/** Response metadata of a call: HTTP headers (RateLimit-*, Retry-After, WWW-Authenticate …). */
export type CallHeaders = Readonly<Record<string, string>>;

export type CallOutcome =
  | { ok: true; value: RichResult<Record<string, unknown>>; headers: CallHeaders | undefined }
  | { ok: false; error: ToolError; headers: CallHeaders | undefined };

const noProgress: ProgressFn = async () => {};
const neverAborted = new AbortController().signal;

/**
 * What a handler sees beside its input. A class, not an object literal with a getter: the
 * literal cost ~10 µs per call here.
 */
class CallContext implements ToolContext {
  constructor(
    readonly caller: Caller,
    readonly services: Services,
    readonly progress: ProgressFn,
    readonly signalSource: AbortSignal | (() => AbortSignal) | undefined,
  ) {}

  get signal(): AbortSignal {
    const s = this.signalSource;
    return s === undefined ? neverAborted : typeof s === 'function' ? s() : s;
  }
}

/** The face of a call for metrics and traces: `rest`, `mcp` (HTTP or stdio) or `memory` (tests). */
function faceOf(caller: Caller): string {
  return caller.transport === 'rest' ? 'rest' : caller.transport === 'memory' ? 'memory' : 'mcp';
}

/** A 429 of the rate limits (its details name the window), not of a busy worker pool or fetcher. */
function isLimitRefusal(error: ToolError): boolean {
  return error.code === 'RATE_LIMITED' && typeof (error.details as { window?: unknown } | undefined)?.window === 'string';
}

/** How much of a key id an access line shows: enough to tell keys apart, not the whole id. */
const KEY_ID_PREFIX = 8;

export class CallPath {
  /** Request tracking on (LOG_FORMAT=json, LOG_REQUESTS=on): the request's log lines learn the tool and key. */
  readonly #tracking: boolean;

  constructor(
    readonly services: Services,
    readonly offThread?: OffThreadRunner,
  ) {
    this.#tracking = services.config.logFormat === 'json' || services.config.logRequests;
  }

  /** One tool call. Never throws: the outcome carries the error in the contract's shape. */
  async call(caller: Caller, tool: AnyTool, input: unknown, opts: CallOptions = {}): Promise<CallOutcome> {
    return this.invoke(caller, tool, input, opts);
  }

  /**
   * `call`, answered synchronously when nothing on the way is asynchronous (an embedded
   * limiter, an inline handler that returns its result): each promise hop costs measurably on a
   * small call (issue 21). Never throws.
   */
  invoke(caller: Caller, tool: AnyTool, input: unknown, opts: CallOptions = {}): CallOutcome | Promise<CallOutcome> {
    if (this.#tracking) {
      const rc = requestContext.getStore();
      if (rc) {
        rc.tool = tool.name;
        if (caller.keyId !== null) rc.key_id = caller.keyId.slice(0, KEY_ID_PREFIX);
      }
    }
    const t = this.services.telemetry;
    if (t) {
      // A span per tool call (a child of its request's): tool, face, era, and the error code of a failure.
      return inSpan(t, `tool ${tool.name}`, { 'tool.name': tool.name, 'tool.face': faceOf(caller), 'mcp.era': opts.era ?? 'none' }, () => this.#measured(caller, tool, input, opts), (span, out) => {
        if (out && !out.ok) {
          span.setAttribute('error.type', out.error.code);
          span.setStatus({ code: t.api.SpanStatusCode.ERROR });
        }
      });
    }
    return this.#measured(caller, tool, input, opts);
  }

  /** The admitted call, timed and counted when metrics are on. */
  #measured(caller: Caller, tool: AnyTool, input: unknown, opts: CallOptions): CallOutcome | Promise<CallOutcome> {
    if (!this.services.metrics.enabled) return this.#admit(caller, tool, input, opts);
    const started = performance.now();
    const out = this.#admit(caller, tool, input, opts);
    if (out instanceof Promise) return out.then((o) => this.#counted(caller, tool, opts, o, started));
    return this.#counted(caller, tool, opts, out, started);
  }

  /** Counts a finished call (tool_calls_total and friends; a 429 by the caller's plan). */
  #counted(caller: Caller, tool: AnyTool, opts: CallOptions, out: CallOutcome, started: number): CallOutcome {
    const { metrics, auth } = this.services;
    metrics.toolCall(tool.name, faceOf(caller), opts.era ?? 'none', out.ok ? 'ok' : out.error.code, (performance.now() - started) / 1000);
    if (!out.ok && isLimitRefusal(out.error)) metrics.rateLimited(auth.planOf(caller));
    return out;
  }

  /**
   * `auth.refuseEarly` (REST: a caller already over its limit is refused before its body is
   * read), counted as the refused call it is. Throws the refusal.
   */
  refuseEarly(caller: Caller, tool: AnyTool): void {
    try {
      this.services.auth.refuseEarly(caller, tool);
    } catch (err) {
      if (this.services.metrics.enabled && err instanceof ToolError) this.#counted(caller, tool, {}, { ok: false, error: err, headers: undefined }, performance.now());
      throw err;
    }
  }

  #admit(caller: Caller, tool: AnyTool, input: unknown, opts: CallOptions): CallOutcome | Promise<CallOutcome> {
    let headers: CallHeaders | undefined;
    try {
      const admitted = this.services.auth.admit(caller, tool);
      // A shared limiter (Redis) answers asynchronously; the embedded one synchronously.
      if (admitted instanceof Promise) {
        return admitted.then(
          (h) => this.#run(caller, tool, input, opts, h),
          (err: unknown) => this.#failed(tool, err, undefined, opts),
        );
      }
      headers = admitted;
    } catch (err) {
      return this.#failed(tool, err, undefined, opts);
    }
    return this.#run(caller, tool, input, opts, headers);
  }

  /** The admitted call: its handler, inline or off the main thread. */
  #run(caller: Caller, tool: AnyTool, input: unknown, opts: CallOptions, headers: CallHeaders | undefined): CallOutcome | Promise<CallOutcome> {
    try {
      if (headers && opts.onHeaders) opts.onHeaders(headers);
      const ctx = new CallContext(caller, this.services, opts.progress ?? noProgress, opts.signal);
      const value = tool.cost === 'cpu' && this.offThread ? this.offThread.run(tool, input, ctx) : runTool(tool, input, ctx);
      if (value instanceof Promise) {
        return value.then(
          (v): CallOutcome => ({ ok: true, value: v, headers }),
          (err: unknown) => this.#failed(tool, err, headers, opts),
        );
      }
      return { ok: true, value, headers };
    } catch (err) {
      return this.#failed(tool, err, headers, opts);
    }
  }

  #failed(tool: AnyTool, err: unknown, headers: CallHeaders | undefined, opts: CallOptions): CallOutcome {
    const error = toToolError(err, (m, cause) => this.services.log.error(`${m} in ${tool.name}`, cause));
    // A refused call carries its limit headers in the error; a failed one was still counted.
    const all = headers && error.headers ? joinHeaders(error.headers, headers) : (headers ?? error.headers);
    if (all && opts.onHeaders && all !== headers) opts.onHeaders(all);
    return { ok: false, error, headers: all };
  }
}
