// Cron task benchmark (issue 7): with 100k tasks across 1,000 agents stored, the time of one
// due-check tick, and GET /api/cron-task?agent_id=…&due=true under 32 concurrent clients.
// Standalone: `node --import tsx bench/cron-tasks.ts`. BENCH_SECONDS (load run, default 6),
// BENCH_CRON_TASKS (tasks stored, default 100000; 100 per agent).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config.js';
import { invokeTool } from '../src/invoke.js';
import { createLogger } from '../src/log.js';
import type { AnyTool, ToolContext } from '../src/registry.js';
import { startScheduler } from '../src/tools/cron-tasks/scheduler.js';
import { closeServices, createServices, type Services } from '../src/services.js';
import { cronTaskCreate } from '../src/tools/cron-tasks/cron-task-create.js';
import { cronTaskList } from '../src/tools/cron-tasks/cron-task-list.js';
import { freePort, startProcess } from './lib.js';

const MIN = 60_000;
const seconds = () => Number(process.env.BENCH_SECONDS ?? 6);


function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/** A webhook receiver answering 200, counting hits. */
async function receiver(): Promise<{ url: string; hits: () => number; close(): Promise<void> }> {
  let hits = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hook`,
    hits: () => hits,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

export async function benchCronTasks(): Promise<Record<string, number>> {
  const n = Number(process.env.BENCH_CRON_TASKS ?? 100_000);
  const agents = Math.max(1, Math.round(n / 100));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-cron-'));
  const rx = await receiver();
  const procs: ChildProcess[] = [];
  // Seeded three hours in the past: about an eighth of the daily tasks are due for the list run.
  const T = Math.floor((Date.now() - 3 * 60 * MIN) / MIN) * MIN;
  const clock = { t: T, now() { return this.t; } };
  let services: Services | undefined;
  try {
    services = await createServices(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'error', FETCH_ALLOW_PRIVATE: 'true', RATE_LIMITS: 'off' }), {
      log: createLogger('error'),
      clock,
    });
    const ctx: ToolContext = { services, caller: { keyId: null, ip: 'bench', transport: 'memory' }, progress: async () => {}, signal: new AbortController().signal };
    const create = (input: Record<string, unknown>) => invokeTool(cronTaskCreate as unknown as AnyTool, input, ctx);

    // 100 tasks per agent, daily at a random minute; one in ten with a webhook.
    let seed = 7;
    const rand = (k: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % k;
    };
    const t0 = performance.now();
    const BATCH = 1000;
    for (let start = 0; start < n; start += BATCH) {
      const batch: Promise<unknown>[] = [];
      for (let i = start; i < Math.min(n, start + BATCH); i++) {
        const input: Record<string, unknown> = {
          agent_id: `agent-${String(i % agents).padStart(4, '0')}`,
          name: `task ${i}`,
          schedule: `${rand(60)} ${rand(24)} * * *`,
          description: 'A benchmark task with a description of typical length for an agent.',
          tags: ['bench', `group-${i % 10}`],
          max_retries: i % 4,
        };
        if (i % 10 === 0) input.callback_url = rx.url;
        batch.push(create(input));
      }
      await Promise.all(batch);
    }
    const seedSeconds = (performance.now() - t0) / 1000;
    // A burst: 1000 webhook tasks (two agents) all due at the same minute, T + 45 min.
    const burstAt = T + 45 * MIN;
    const burstCron = `${new Date(burstAt).getUTCMinutes()} ${new Date(burstAt).getUTCHours()} * * *`;
    await Promise.all(Array.from({ length: 1000 }, (_, i) => create({ agent_id: `burst-${i % 2}`, name: `burst ${i}`, schedule: burstCron, callback_url: rx.url })));
    await services.store.flush();
    const dataBytes = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).reduce((s, f) => s + fs.statSync(path.join(dir, f)).size, 0);

    // The list through invokeTool alone (no HTTP): what the tool itself costs.
    clock.t = T + 3 * 60 * MIN;
    const inProcess: number[] = [];
    for (let i = 0; i < 3000; i++) {
      const s = performance.now();
      await invokeTool(cronTaskList as unknown as AnyTool, { agent_id: `agent-${String(i % agents).padStart(4, '0')}`, due: true }, ctx);
      inProcess.push(performance.now() - s);
    }

    // Due-check ticks, driven by hand on the seeded clock, deliveries settled between ticks.
    const scheduler = startScheduler(services, { timers: false, concurrency: 32 });
    const idle: number[] = [];
    for (let i = 0; i < 20; i++) {
      clock.t = T + 1000 + i; // between minutes: nothing newly due
      const s = performance.now();
      await scheduler.tick();
      idle.push(performance.now() - s);
    }
    const minute: number[] = [];
    let queued = 0;
    for (let m = 1; m <= 30; m++) {
      clock.t = T + m * MIN;
      const s = performance.now();
      const r = await scheduler.tick();
      minute.push(performance.now() - s);
      queued += r.queued;
      await scheduler.settle();
    }
    clock.t = burstAt;
    let s = performance.now();
    const burst = await scheduler.tick();
    const burstMs = performance.now() - s;
    s = performance.now();
    await scheduler.settle();
    while ((await scheduler.tick()).started > 0) await scheduler.settle();
    const burstDeliverMs = performance.now() - s;
    await scheduler.stop();
    await closeServices(services);
    services = undefined;

    // The real server on that data dir, GET …&due=true over a rotating set of agents.
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    procs.push(
      await startProcess(
        ['--import', 'tsx', 'src/main.ts', 'serve'],
        { PORT: String(port), DATA_DIR: dir, RATE_LIMITS: 'off', LOG_LEVEL: 'error', FETCH_ALLOW_PRIVATE: 'true' },
        `${base}/healthz`,
      ),
    );
    const probe = (await (await fetch(`${base}/api/cron-task?agent_id=agent-0001&due=true`)).json()) as { count: number };
    // Let the server's start-up due check deliver what fell due in the seeded past (until no
    // webhook arrived for 1.5 s): the load run then measures the list alone.
    const settleStart = Date.now();
    for (let last = -1; rx.hits() !== last && Date.now() - settleStart < 30_000; ) {
      last = rx.hits();
      await new Promise((r) => setTimeout(r, 1500));
    }
    // Warm-up (JIT, caches), not measured.
    await autocannon({ url: `${base}/api/cron-task?agent_id=agent-0000&due=true`, connections: 8, duration: 1 });
    // Baseline under the same conditions: the cheapest route of the same server.
    const health = await autocannon({ url: `${base}/healthz`, connections: 32, duration: seconds() });
    let k = 0;
    const r = await autocannon({
      url: base,
      connections: 32,
      duration: seconds(),
      requests: [{ method: 'GET', setupRequest: (req) => ({ ...req, path: `/api/cron-task?agent_id=agent-${String(k++ % agents).padStart(4, '0')}&due=true` }) }],
    });
    return {
      tasksStored: n + 1000,
      agents,
      seedSeconds: round(seedSeconds, 1),
      dataBytes,
      tickIdleMedianMs: round(percentile(idle, 50), 3),
      tickIdleMaxMs: round(Math.max(...idle), 3),
      tickPerMinuteMedianMs: round(percentile(minute, 50), 3),
      tickPerMinuteMaxMs: round(Math.max(...minute), 3),
      webhooksQueuedPerMinute: round(queued / 30, 1),
      tickBurst1000Ms: round(burstMs, 1),
      burstQueued: burst.queued,
      burstDeliveredMs: Math.round(burstDeliverMs),
      webhooksReceived: rx.hits(),
      listDueTasksPerAgent: probe.count,
      listInProcessMedianMs: round(percentile(inProcess, 50), 3),
      listInProcessP99Ms: round(percentile(inProcess, 99), 3),
      healthzRps: Math.round(health.requests.average),
      healthzP99Ms: health.latency.p99,
      listRps: Math.round(r.requests.average),
      listP50Ms: r.latency.p50,
      listP99Ms: r.latency.p99,
      listErrors: r.errors + r.timeouts + r.non2xx,
    };
  } finally {
    for (const p of procs) p.kill('SIGKILL');
    if (services) await closeServices(services);
    await rx.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchCronTasks();
  console.log(JSON.stringify(r, null, 2));
  process.exit(0);
}
