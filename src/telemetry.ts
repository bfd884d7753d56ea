/**
 * Traces (opt-in; docs/operations.md, Traces): OpenTelemetry's standard SDK, loaded only when
 * OTEL_EXPORTER_OTLP_ENDPOINT is set — otherwise nothing is imported and no hook runs. A span per
 * HTTP request (a W3C `traceparent` it arrives with is its parent), per tool call (REST and MCP
 * alike: tool, face, era, outcome, error code), and child spans for fetches (whose `traceparent`
 * the upstream receives), store operations (Redis commands on Redis) and worker-pool runs,
 * exported over OTLP/HTTP.
 */
import type * as Api from '@opentelemetry/api';
import type { Config } from './config.js';
import { SERVER_VERSION as VERSION } from './version.js';

export interface Telemetry {
  readonly api: typeof Api;
  readonly tracer: Api.Tracer;
  /** The parent context a request's headers carry (`traceparent`, `tracestate`). */
  extract(header: (name: string) => string | null): Api.Context;
  /** The active span as W3C headers (`traceparent`, and `tracestate` when set) for an outgoing request. */
  inject(): Record<string, string>;
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/** Starts tracing when OTEL_EXPORTER_OTLP_ENDPOINT is set; undefined (and nothing loaded) otherwise. */
export async function startTelemetry(config: Pick<Config, 'otelEndpoint'>): Promise<Telemetry | undefined> {
  if (config.otelEndpoint === null) return undefined;
  const [api, core, node, base, exporter, resources] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/resources'),
  ]);
  const provider = new node.NodeTracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME || 'devtoolbox-mcp', 'service.version': VERSION }),
    spanProcessors: [new base.BatchSpanProcessor(new exporter.OTLPTraceExporter({ url: `${config.otelEndpoint.replace(/\/+$/, '')}/v1/traces` }))],
  });
  // The global context manager (AsyncLocalStorage), so a tool call's span is its request's child.
  provider.register();
  const propagator = new core.W3CTraceContextPropagator();
  const getter: Api.TextMapGetter<(name: string) => string | null> = { get: (h, key) => h(key) ?? undefined, keys: () => [] };
  return {
    api,
    tracer: provider.getTracer('devtoolbox-mcp', VERSION),
    extract: (header) => propagator.extract(api.ROOT_CONTEXT, header, getter),
    inject: () => {
      const carrier: Record<string, string> = {};
      propagator.inject(api.context.active(), carrier, api.defaultTextMapSetter);
      return carrier;
    },
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Runs `fn` inside a new span (a child of the active one); `end` adds what the result says
 * before the span ends. Sync results stay sync.
 */
export function inSpan<T>(t: Telemetry, name: string, attributes: Api.Attributes, fn: () => T | Promise<T>, end: (span: Api.Span, result: T | undefined, err: unknown) => void, parent?: Api.Context, kind?: Api.SpanKind): T | Promise<T> {
  const ctx = parent ?? t.api.context.active();
  const span = t.tracer.startSpan(name, { attributes, kind }, ctx);
  const finish = (result: T | undefined, err: unknown) => {
    try {
      end(span, result, err);
    } finally {
      span.end();
    }
  };
  let out: T | Promise<T>;
  try {
    out = t.api.context.with(t.api.trace.setSpan(ctx, span), fn);
  } catch (err) {
    finish(undefined, err);
    throw err;
  }
  if (out instanceof Promise) {
    return out.then(
      (v) => {
        finish(v, undefined);
        return v;
      },
      (err: unknown) => {
        finish(undefined, err);
        throw err;
      },
    );
  }
  finish(out, undefined);
  return out;
}

/** Marks a span failed with an error code (ToolError, StoreError) or the error's name. */
export function failSpan(t: Telemetry, span: Api.Span, err: unknown): void {
  const code = (err as { code?: unknown } | null)?.code;
  span.setAttribute('error.type', typeof code === 'string' ? code : err instanceof Error ? err.name : 'error');
  span.setStatus({ code: t.api.SpanStatusCode.ERROR });
}

type Fetch = (req: Request, env?: unknown, executionCtx?: never) => Response | Promise<Response>;

/**
 * `inner` with a server span per request: its parent from the request's `traceparent`, named by
 * the route template once known (never the raw path), its status code set from the answer.
 */
export function withTracing<F extends Fetch>(inner: F, t: Telemetry, route: (method: string, rawPath: string) => string): F {
  const traced: Fetch = (req, env, executionCtx) => {
    const incoming = (env as { incoming?: { url?: string; headers?: Record<string, string | string[] | undefined> } } | undefined)?.incoming;
    const header = (name: string): string | null => {
      const v = incoming ? incoming.headers?.[name] : req.headers.get(name);
      return v === undefined || v === null ? null : Array.isArray(v) ? v.join(',') : v;
    };
    const rawPath = incoming?.url ?? req.url.replace(/^https?:\/\/[^/]+/, '');
    const template = route(req.method, rawPath);
    return inSpan(
      t,
      `${req.method} ${template}`,
      { 'http.request.method': req.method, 'http.route': template },
      () => inner(req, env, executionCtx),
      (span, res, err) => {
        if (res) {
          span.setAttribute('http.response.status_code', res.status);
          if (res.status >= 500) span.setStatus({ code: t.api.SpanStatusCode.ERROR });
        } else failSpan(t, span, err);
      },
      t.extract(header),
      t.api.SpanKind.SERVER,
    );
  };
  return traced as F;
}
