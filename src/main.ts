import type { Server } from 'node:http';
import os from 'node:os';
import type { Core, Service } from './app.js';
import { CONFIG_VARS, ConfigError, loadConfig, type Config } from './config.js';
import { systemClock } from './core/clock.js';
import { drainHttp } from './http/drain.js';
import { createLogger } from './log.js';
import { openStore, StoreError, type Store } from './state/index.js';

const HELP = `devtoolbox — MCP-first developer tool server

Usage:
  devtoolbox [serve]          start the HTTP server (REST + MCP at POST /mcp)
  devtoolbox stdio [--toolsets a,b] [--tools x,y]
                              serve MCP over stdin/stdout (for an agent's config),
                              listing only those toolsets and tools (default: TOOLSETS, or all)
  devtoolbox keys list        list API keys (prefixes only)
  devtoolbox keys set-plan <email> pro|free
  devtoolbox export [FILE]    write every record as JSON lines (default: stdout)
  devtoolbox import [--merge] [FILE]
                              read an export into the store (default: stdin)
  devtoolbox check-indexes [--repair]
                              compare the stored indexes with their records (Redis),
                              after an upgrade that added an index
  devtoolbox --help           this text

Configuration (environment):
${CONFIG_VARS.map((v) => `  ${v.name.padEnd(20)} ${v.description} (default: ${v.default || 'none'})`).join('\n')}
`;

async function main(argv: string[]): Promise<number> {
  const [cmd = 'serve', ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`devtoolbox: configuration error: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (cmd === 'serve') {
    const service = await startService(config);
    const { serve } = await import('@hono/node-server');
    const { startBackground } = await import('./app.js');
    const { hardenServer, SERVER_OPTIONS } = await import('./http/server.js');
    const { writeServerRecord } = await import('./http/server-record.js');
    // Background work (cron task due checks and webhooks): serve mode only (stdio is a short-lived
    // local launch), once the data is loaded (its checks would wait for the load anyway).
    let stopBackground: (() => Promise<void>) | undefined;
    let stopping = false;
    void service.ready.then(
      () => {
        if (!stopping) stopBackground = startBackground(service);
      },
      () => {}, // reported below
    );
    const server = serve({ fetch: service.app.fetch, port: config.port, hostname: config.host, serverOptions: SERVER_OPTIONS }, (info) => {
      const host = info.address.includes(':') ? `[${info.address}]` : info.address;
      // The CLI reaches a wildcard bind on loopback.
      const local = host === '0.0.0.0' ? '127.0.0.1' : host === '[::]' ? '[::1]' : host;
      // With REDIS_URL there is no data dir to record the address in (the CLI talks to Redis).
      if (!config.redis) writeServerRecord(config.dataDir, { url: `http://${local}:${info.port}`, pid: process.pid });
      service.services.log.info(`devtoolbox listening on http://${host}:${info.port} (MCP at /mcp, docs at /docs)`);
    });
    hardenServer(server as Server, config);
    if (config.metricsPort !== null) {
      const { serveMetricsPort } = await import('./metrics-http.js');
      try {
        const scrape = await serveMetricsPort(config, service.services.metrics);
        const a = scrape.address();
        service.services.log.info(`metrics on http://${config.host}:${typeof a === 'object' && a ? a.port : config.metricsPort}/metrics`);
        // Closed with the services: a drain can still be watched.
        service.services.closers.unshift(() => new Promise<void>((r) => void scrape.close(() => r()).closeAllConnections()));
      } catch (err) {
        service.services.log.error(`cannot listen for metrics on ${config.host}:${config.metricsPort}: ${err instanceof Error ? err.message : String(err)}`);
        void service.close().then(() => process.exit(1));
      }
    }
    service.ready.catch((err: unknown) => {
      service.services.log.error(`cannot load the data: ${err instanceof Error ? err.message : String(err)}`);
      void service.close().then(() => process.exit(1));
    });
    server.on('error', (err) => {
      service.services.log.error(`cannot listen on ${config.host}:${config.port}: ${err.message}`);
      void service.close().then(() => process.exit(1));
    });
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        service.services.log.warn(`${signal} again: exiting without waiting for the calls in flight`);
        process.exit(128 + (os.constants.signals[signal] ?? 0));
      }
      stopping = true;
      if (!config.redis) writeServerRecord(config.dataDir, null);
      void shutdown(service, server as Server, stopBackground, config.shutdownTimeoutMs).then((code) => process.exit(code));
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    return -1;
  }
  if (cmd === 'stdio') {
    const core = await buildStdioCore(config);
    const { stdioSelection } = await import('./mcp/toolsets.js');
    const selected = stdioSelection(core.registry, rest, config.toolsets);
    if (typeof selected === 'string') {
      await core.close();
      process.stderr.write(`devtoolbox: ${selected}\n`);
      return 2;
    }
    let keyId: string | null = null;
    if (config.stdioApiKey !== null) {
      const { findApiKey } = await import('./auth/keys.js');
      const rec = await findApiKey(core.services.store, config.stdioApiKey);
      if (!rec) {
        await core.close();
        process.stderr.write('devtoolbox: STDIO_API_KEY is not a key this store knows (create one with POST /api/keys on a server using the same DATA_DIR or REDIS_URL)\n');
        return 2;
      }
      keyId = rec.key_id;
    }
    const { serveStdio } = await import('./mcp/stdio.js');
    const server = await serveStdio({ ...selected, keyId, calls: core.calls, tasks: core.tasks, log: core.services.log });
    const stop = () => void server.close().then(() => core.close()).then(() => process.exit(0));
    // Input ended: answer what is in flight, then go.
    void server.closed.then(stop);
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    return -1;
  }
  if (cmd === 'export' || cmd === 'import') {
    const { transferCommand } = await import('./state/transfer-cli.js');
    const { manifests, settleForCli } = await import('./tools/manifests.js');
    return transferCommand(cmd, rest, config, { known: manifests.flatMap((f) => f.collections ?? []), settle: (store, log) => settleForCli(manifests, store, config, log) });
  }
  if (cmd === 'check-indexes') {
    const { checkIndexesCommand } = await import('./state/check-indexes-cli.js');
    const { STORED_COLLECTIONS } = await import('./tools/manifests.js');
    return checkIndexesCommand(rest, config, STORED_COLLECTIONS);
  }
  if (cmd === 'keys') {
    const { keysCommand } = await import('./keys-cli.js');
    return keysCommand(rest, config);
  }
  process.stderr.write(`devtoolbox: unknown command "${cmd}"\n\n${HELP}`);
  return 2;
}

/** How long the services (the store last) may take to close once the HTTP drain is over. */
const CLOSE_GRACE_MS = 5000;

/**
 * The graceful stop of `serve` (docs/operations.md): /healthz turns 503 `draining` and the
 * listener closes at once; the background services stop claiming work; the calls in flight and
 * the tasks running here get `timeoutMs` to finish; then the services close, the store last.
 * Resolves with the exit code: 0 when every call finished, 1 when some were cut at the deadline
 * or the services did not close within CLOSE_GRACE_MS.
 */
async function shutdown(service: Service, server: Server, stopBackground: (() => Promise<void>) | undefined, timeoutMs: number): Promise<number> {
  const { log } = service.services;
  service.services.draining = true;
  const drained = drainHttp(server, timeoutMs);
  log.info(`draining: no new connections; calls in flight have ${timeoutMs} ms to finish`);
  const deadline = Date.now() + timeoutMs;
  await stopBackground?.();
  // Tasks (MCP Tasks, REST Prefer: respond-async) run on past their HTTP answer: they get the same deadline.
  const httpInTime = await drained;
  if (httpInTime) log.info('draining: every connection closed; waiting for the tasks running here');
  const inTime = httpInTime && (await settleBy(service.tasks.settle(), deadline));
  if (!inTime) log.warn(`calls still running after SHUTDOWN_TIMEOUT_MS (${timeoutMs} ms) were cut`);
  const closed = await settleBy(service.close(), Date.now() + CLOSE_GRACE_MS);
  if (!closed) log.error(`the services did not close within ${CLOSE_GRACE_MS} ms`);
  return inTime && closed ? 0 : 1;
}

/** Whether `work` settled before `deadline` (ms since the epoch). */
function settleBy(work: Promise<void>, deadline: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), Math.max(0, deadline - Date.now()))));
  return Promise.race([work.then(() => true), late]).finally(() => clearTimeout(timer));
}

/**
 * Builds the service for `serve`. The store opens and its collections start loading (on the load
 * workers for a large one) before the tool modules are imported, so that the time those take
 * to import overlaps the load instead of preceding it (issue 18).
 */
async function startService(config: Config): Promise<Service> {
  const log = createLogger(config.logLevel, config.logFormat);
  const opened = await openStore(config, { log, clock: systemClock });
  let store: Store | undefined = opened;
  try {
    const { STORED_COLLECTIONS, manifests } = await import('./tools/manifests.js');
    // Failures are seen through the service's `ready`, which waits for the same loads.
    opened.preload(STORED_COLLECTIONS).catch(() => {});
    // The families' threads (the analytics thread with ANALYTICS_THREAD=worker), their stores routed in; `opened` is closed when one fails.
    const { withThreads } = await import('./services.js');
    store = undefined;
    const withThread = await withThreads(opened, config, log, manifests);
    store = withThread.store;
    const { buildService } = await import('./app.js');
    return await buildService(config, { store, log, threads: withThread.threads });
  } catch (err) {
    // Closed already when the analytics thread failed to start (store unset then).
    await store?.close();
    throw err;
  }
}

/**
 * The core of a stdio launch. An MCP client may launch the server twice within milliseconds on
 * the same DATA_DIR (the SDK v2 client's version probe is a short-lived sibling process, reaped
 * just before the real one starts), so a data dir held by another process is waited for, briefly,
 * before giving up with the usual LOCKED message.
 */
async function buildStdioCore(config: Config, waitMs = 10_000): Promise<Core> {
  const deadline = Date.now() + waitMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 250)) {
    try {
      const { buildCore } = await import('./app.js');
      return await buildCore(config);
    } catch (err) {
      if (!(err instanceof StoreError && err.code === 'LOCKED') || Date.now() + delay > deadline) throw err;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`devtoolbox: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
