import type { CallPath } from '../core/call.js';
import type { Logger } from '../log.js';
import type { Caller, Registry } from '../registry.js';
import { Dispatcher } from './dispatch.js';
import { LEGACY_VERSIONS } from './legacy.js';
import { legacyStdioPeer } from './server.js';
import type { TaskManager } from '../core/tasks/index.js';

export interface StdioOptions {
  registry: Registry;
  calls: CallPath;
  tasks?: TaskManager | undefined;
  log: Pick<Logger, 'error'>;
  input?: NodeJS.ReadableStream;
  output?: NodeJS.WritableStream;
  /** The API key's id the launch acts as (STDIO_API_KEY, looked up by the caller); null/absent = keyless. */
  keyId?: string | null | undefined;
  /** `private` when the launch chose its toolsets (./toolsets.ts): the cache scope of tools/list and discover. */
  cacheScope?: 'public' | 'private' | undefined;
}

export interface StdioServer {
  /** Resolves when the input has ended and every request in flight has been answered. */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * MCP over stdio, both eras in one process: newline-delimited JSON-RPC. A modern message (its
 * `_meta` carries the protocol version; `server/discover`, `subscriptions/listen`) is answered by
 * our dispatch — the SDK v2 client's probe included; everything else (initialize and the
 * legacy session after it) by the SDK's server, exactly as before. Nothing but protocol on stdout.
 */
export async function serveStdio(opts: StdioOptions): Promise<StdioServer> {
  const input = opts.input ?? process.stdin;
  const output = opts.output ?? process.stdout;
  const caller: Caller = { keyId: opts.keyId ?? null, ip: 'stdio', transport: 'stdio' };
  const write = (line: string) => void output.write(`${line}\n`);
  const dispatch = new Dispatcher({ registry: opts.registry, calls: opts.calls, tasks: opts.tasks, legacyVersions: LEGACY_VERSIONS, cacheScope: opts.cacheScope });
  const legacy = await legacyStdioPeer({ registry: opts.registry, calls: opts.calls, apps: 'declared' }, caller, write, (err) =>
    opts.log.error(`stdio: ${err.message}`),
  );
  /** Modern requests in flight, by id: notifications/cancelled aborts one (and it is not answered). */
  const inflight = new Map<string | number, AbortController>();
  const running = new Set<Promise<void>>();

  const onMessage = (msg: unknown) => {
    const m = msg as { id?: string | number; method?: string; params?: { requestId?: string | number } };
    if (m && m.method === 'notifications/cancelled' && m.id === undefined) {
      const ctrl = m.params?.requestId !== undefined ? inflight.get(m.params.requestId) : undefined;
      if (ctrl) {
        ctrl.abort(new Error('Cancelled by the client'));
        return;
      }
    }
    if (!dispatch.isModern(msg)) {
      legacy.deliver(msg);
      return;
    }
    const ctrl = new AbortController();
    const id = m.id;
    if (id !== undefined) inflight.set(id, ctrl);
    const p = dispatch
      .stdio(msg as Record<string, unknown>, caller, write, ctrl.signal)
      .then(
        (answer) => {
          if (answer !== undefined && !ctrl.signal.aborted) write(answer);
        },
        (err: unknown) => opts.log.error(`stdio: ${err instanceof Error ? err.message : String(err)}`),
      )
      .finally(() => {
        if (id !== undefined && inflight.get(id) === ctrl) inflight.delete(id);
        running.delete(p);
      });
    running.add(p);
  };

  let buffer = '';
  const onData = (chunk: Buffer | string) => {
    buffer += typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    for (let nl = buffer.indexOf('\n'); nl !== -1; nl = buffer.indexOf('\n')) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line.trim() === '') continue;
      let msg: unknown;
      try {
        msg = JSON.parse(line);
      } catch {
        // As the SDK's stdio transport: reported on stderr, nothing written.
        opts.log.error('stdio: a line that is not JSON was ignored');
        continue;
      }
      onMessage(msg);
    }
  };
  input.on('data', onData);
  const closed = new Promise<void>((resolve) => {
    input.once('end', () => {
      void Promise.allSettled([...running]).then(() => resolve());
    });
  });
  return {
    closed,
    async close() {
      input.off('data', onData);
      for (const c of inflight.values()) c.abort(new Error('Server closing'));
      await legacy.close().catch(() => {});
    },
  };
}
