/**
 * The store and the fetcher as the metrics see them: the same objects, each operation timed
 * and its outcome counted (src/metrics.ts). Applied by createServices only when metrics are on,
 * so nothing sits in between otherwise.
 */
import type { Metrics } from './metrics.js';
import type { Fetcher } from './net/fetch.js';
import type { Store } from './state/index.js';
import { failSpan, inSpan, type Telemetry } from './telemetry.js';

/** The operations of a collection and of the store that reach the storage. */
const COLLECTION_OPS = new Set(['get', 'put', 'insert', 'insertCapped', 'delete', 'update', 'compareAndSet', 'increment', 'add', 'addMany', 'query', 'count']);
const STORE_OPS = new Set(['scan', 'putMany', 'flush', 'listCollections']);
const WINDOW_OPS = new Set(['rate', 'slide']);

/** What an operation's failure counts as: the StoreError code, else `error`. */
function outcomeOf(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return err instanceof Error && err.name === 'StoreError' && typeof code === 'string' ? code : 'error';
}

/** `target` with the methods named in `ops` timed under `backend`; other members pass through. */
function timed<T extends object>(target: T, ops: ReadonlySet<string>, backend: string, metrics: Metrics, telemetry: Telemetry | undefined, wrapOther?: (key: string, value: unknown) => unknown): T {
  const cache = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(t, key) {
      const value = Reflect.get(t, key, t) as unknown;
      if (typeof key !== 'string') return value;
      if (cache.has(key)) return cache.get(key);
      let out: unknown = value;
      if (typeof value === 'function') {
        const fn = value as (...args: unknown[]) => unknown;
        out = ops.has(key) ? traced(meter(fn.bind(t), backend, key, metrics), backend, key, telemetry) : fn.bind(t);
        if (wrapOther && !ops.has(key)) out = wrapOther(key, out);
        cache.set(key, out);
      } else if (wrapOther) {
        out = wrapOther(key, value);
        // Getters (`ready`) are read anew each time; only the objects wrapped once are cached.
        if (out !== value) cache.set(key, out);
      }
      return out;
    },
  });
}

function meter(fn: (...args: unknown[]) => unknown, backend: string, op: string, metrics: Metrics): (...args: unknown[]) => unknown {
  return (...args) => {
    const started = performance.now();
    const done = (outcome: string) => metrics.storeOp(backend, op, outcome, (performance.now() - started) / 1000);
    let r: unknown;
    try {
      r = fn(...args);
    } catch (err) {
      done(outcomeOf(err));
      throw err;
    }
    if (r instanceof Promise) {
      return r.then(
        (v: unknown) => {
          done('ok');
          return v;
        },
        (err: unknown) => {
          done(outcomeOf(err));
          throw err;
        },
      );
    }
    done('ok');
    return r;
  };
}

/** `fn` in a client span `<backend> <op>` (a Redis command on Redis) when tracing is on. */
function traced(fn: (...args: unknown[]) => unknown, backend: string, op: string, t: Telemetry | undefined): (...args: unknown[]) => unknown {
  if (!t) return fn;
  return (...args) =>
    inSpan(t, `${backend} ${op}`, { 'db.system.name': backend, 'db.operation.name': op }, () => fn(...args), (span, _r, err) => err !== undefined && failSpan(t, span, err), undefined, t.api.SpanKind.CLIENT);
}

/** The store with every storage operation timed (`store_operation_duration_seconds`, `storage_unavailable_total`). */
export function meteredStore(store: Store, metrics: Metrics, telemetry?: Telemetry): Store {
  const backend = store.kind;
  const collections = new WeakMap<object, object>();
  return timed(store, STORE_OPS, backend, metrics, telemetry, (key, value) => {
    if (key === 'collection' && typeof value === 'function') {
      const open = value as (def: unknown) => object;
      return (def: unknown) => {
        const c = open(def);
        let wrapped = collections.get(c);
        if (!wrapped) collections.set(c, (wrapped = timed(c, COLLECTION_OPS, backend, metrics, telemetry)));
        return wrapped;
      };
    }
    if (key === 'windows' && value !== undefined && value !== null) return timed(value as object, WINDOW_OPS, backend, metrics, telemetry);
    return value;
  });
}

/** The fetcher with its in-flight fetches and their outcomes counted (`fetches_in_flight`, `fetches_total`). */
export function meteredFetcher(fetcher: Fetcher, metrics: Metrics, telemetry?: Telemetry): Fetcher {
  const counted: Fetcher['fetch'] = async (url, opts) => {
    const end = metrics.fetchStarted();
    try {
      const res = await fetcher.fetch(url, opts);
      end(`${Math.floor(res.status / 100)}xx`);
      return res;
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      end(typeof code === 'string' ? code : 'error');
      throw err;
    }
  };
  const t = telemetry;
  if (!t) return { ...fetcher, fetch: counted };
  return {
    ...fetcher,
    // A client span per fetch: the method and the host, never the path or its query. The
    // upstream gets the span as its W3C parent (traceparent), so its own traces join ours.
    fetch: (url, opts) => {
      let host = '';
      try {
        host = new URL(String(url)).hostname;
      } catch {
        // the fetcher refuses it; the span says so
      }
      const method = opts?.method ?? 'GET';
      return inSpan(
        t,
        `fetch ${method}`,
        { 'http.request.method': method, 'server.address': host },
        () => counted(url, { ...opts, headers: { ...opts?.headers, ...t.inject() } }),
        (span, res, err) => (res ? span.setAttribute('http.response.status_code', res.status) : failSpan(t, span, err)),
        undefined,
        t.api.SpanKind.CLIENT,
      ) as ReturnType<Fetcher['fetch']>;
    },
  };
}
