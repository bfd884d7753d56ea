// npm run soak: the real server under a mixed load of every REST tool plus MCP calls, with
// fixtures on loopback, at 32 concurrent clients for SOAK_SECONDS (default 60). Then checks:
// zero 5xx, zero connection errors, bounded RSS growth, every acknowledged short link and task
// still readable; prints /healthz p99 and a one-line summary. Exits 1 on any failure.
//
// Leaks: the load runs in two halves; after each (and before the first) the server's main
// heap is read after a full GC over its inspector (loopback, this run only). RSS alone says
// little — V8 keeps a grown heap, and the two workers' heaps count in it — so the leak check
// is the second half's live-heap growth per request, which a leak keeps at the first half's
// level while caches and capped collections have filled by then.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { freePort, startService } from './lib.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 60);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 32);
const PORT = Number(process.env.SOAK_PORT ?? 3190);
/** Worker heaps (2 workers × WORKER_HEAP_MB 256, set below) may stay grown after the hostile inputs: bounded, and counted here. */
const SOAK_WORKER_HEAP_MB = 256;
const RSS_GROWTH_LIMIT_MB = Number(process.env.SOAK_RSS_LIMIT_MB ?? 300 + 2 * SOAK_WORKER_HEAP_MB);
/**
 * The leak check, per request so that halves of different speed compare: a leak keeps the second
 * half's live-heap growth per request at the first half's level, while warm-up (code, caches,
 * the collections filling up to their caps) spends itself in the first. The second half must
 * grow less than half as fast per request, unless it grew by less than HEAP_NOISE_MB at all
 * (the links and tasks it stores, too little to judge).
 */
const HEAP_NOISE_MB = Number(process.env.SOAK_HEAP_NOISE_MB ?? 2);
const base = `http://127.0.0.1:${PORT}`;
/** Agents the cron tasks are spread over (a task list is capped per owner and agent). */
const AGENTS = 64;

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** Talks to an inspector: two full GCs, then the main thread's process.memoryUsage(). */
const HEAP_PROBE = `
const ws = new WebSocket(process.argv[1]);
let n = 0;
const pending = new Map();
const send = (method, params = {}) => new Promise((r) => { pending.set(++n, r); ws.send(JSON.stringify({ id: n, method, params })); });
ws.onmessage = (e) => { const m = JSON.parse(e.data); pending.get(m.id)?.(m); };
ws.onopen = async () => {
  await send('HeapProfiler.collectGarbage');
  await send('HeapProfiler.collectGarbage');
  const r = await send('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true });
  console.log(r.result.result.value);
  process.exit(0);
};`;

/** The server's main heap in use after a full GC, in bytes (Node 20's WebSocket client is behind a flag: a child of its own asks). */
async function heapAfterGc(inspectPort: number): Promise<number> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  const { stdout } = await promisify(execFile)(process.execPath, ['--experimental-websocket', '--no-warnings', '-e', HEAP_PROBE, targets[0]!.webSocketDebuggerUrl], { timeout: 60_000 });
  return (JSON.parse(stdout) as { heapUsed: number }).heapUsed;
}

const mb = (bytes: number) => +(bytes / 2 ** 20).toFixed(1);

async function fixtures(): Promise<{ url: string; close: () => void }> {
  const png = await sharp({ create: { width: 320, height: 200, channels: 3, background: { r: 200, g: 40, b: 90 } } }).png().toBuffer();
  const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Soak fixture page</title>
<meta name="description" content="A page the soak run fetches over and over again to check the SEO tools under load.">
<meta name="viewport" content="width=device-width"><link rel="canonical" href="/page"><meta property="og:title" content="Soak">
<script type="application/ld+json">{"@type":"WebPage","name":"soak"}</script></head><body><h1>Soak</h1><img src="/img.png" alt="x"></body></html>`;
  const server = http.createServer((req, res) => {
    if (req.url?.startsWith('/img.png')) {
      res.writeHead(200, { 'content-type': 'image/png' }).end(png);
    } else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

interface Req {
  method: string;
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Called with the parsed JSON of a 2xx answer. */
  ack?: (j: Record<string, unknown>) => void;
}

const links: string[] = [];
const tasks: string[] = [];
let n = 0;

function mix(fx: string): Array<() => Req> {
  const mcp = (name: string, args: Record<string, unknown>): Req => ({
    method: 'POST',
    path: '/mcp',
    headers: { accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: ++n, method: 'tools/call', params: { name, arguments: args } },
  });
  return [
    () => ({ method: 'POST', path: '/api/json-yaml', body: { input: '{"a":[1,2,{"b":"c"}]}' } }),
    () => ({ method: 'POST', path: '/api/base-convert', body: { value: String(++n) } }),
    () => ({ method: 'POST', path: '/api/html-entity', body: { input: '<p class="x">Tom & Jerry</p>' } }),
    () => ({ method: 'POST', path: '/api/xml-format', body: { input: '<a><b x="1">t</b><!-- c --><c/></a>' } }),
    () => ({ method: 'POST', path: '/api/sql-format', body: { input: 'select a, b from t where x = 1 and y in (1,2)', action: 'uppercase' } }),
    () => ({ method: 'POST', path: '/api/cron-parse', body: { expression: '*/15 9-17 * * 1-5', timezone: 'Europe/Paris' } }),
    () => ({ method: 'POST', path: '/api/timezone-convert', body: { datetime: '2026-06-01T12:00' } }),
    () => ({ method: 'POST', path: '/api/qrcode', body: { content: `soak ${++n}`, format: n % 2 ? 'svg' : 'png' } }),
    () => ({ method: 'POST', path: '/api/image-convert', body: { url: `${fx}/img.png`, format: 'webp', width: 160 } }),
    () => ({ method: 'POST', path: '/api/meta-extract', body: { url: `${fx}/page` } }),
    () => ({ method: 'GET', path: `/api/seo-check?url=${encodeURIComponent(`${fx}/page`)}` }),
    () => ({ method: 'POST', path: '/api/shorten', body: { url: `https://example.com/${++n}` }, ack: (j) => links.push(j.code as string) }),
    () => (links.length ? { method: 'GET', path: `/s/${links[n++ % links.length]}` } : { method: 'GET', path: '/healthz' }),
    () => ({
      method: 'POST',
      path: '/api/cron-task',
      body: { name: `soak ${++n}`, schedule: '*/5 * * * *', agent_id: `soak-${n % AGENTS}` },
      ack: (j) => tasks.push((j.task as { task_id: string }).task_id),
    }),
    () => ({ method: 'GET', path: `/api/cron-task?agent_id=soak-${n++ % AGENTS}&due=true` }),
    () => ({ method: 'POST', path: '/api/file-process', body: { action: 'analyze', content: 'a,b,c\n1,x,true\n2,y,false\n3,,true\n' } }),
    () => mcp('base_convert', { value: 'ff', from: 'hex' }),
    () => mcp('json_yaml_convert', { input: 'a: 1' }),
    () => mcp('qrcode_generate', { content: 'mcp soak', format: 'png' }),
  ];
}

/**
 * The worst inputs of each heavy tool (issue 16), sent by two clients of their own all along:
 * each must answer a result or a 4xx/429 while the mix above keeps its latency.
 */
function hostile(): Array<() => Req> {
  const nestedYaml = `${'['.repeat(255)}${'1,'.repeat(200_000)}1${']'.repeat(255)}`;
  const parens = `SELECT ${'('.repeat(99)}1${')'.repeat(99)} FROM t;\n`;
  const sql = parens.repeat(Math.floor(99_000 / parens.length));
  const csv = `a,b,c\n${'1,2.5,x\n'.repeat(250_000)}`;
  const xml = `<rows>${'<a>'.repeat(200_000)}`;
  return [
    () => ({ method: 'POST', path: '/api/json-yaml', body: { input: nestedYaml, direction: 'yaml2json' } }),
    () => ({ method: 'POST', path: '/api/sql-format', body: { input: sql, action: 'uppercase' } }),
    () => ({ method: 'POST', path: '/api/file-process', body: { action: 'analyze', content: csv } }),
    () => ({ method: 'POST', path: '/api/file-process', body: { action: 'parse', content: xml, format: 'xml' } }),
    () => ({ method: 'POST', path: '/api/xml-format', body: { input: xml.slice(0, 400_000) } }),
  ];
}

async function main(): Promise<number> {
  const fx = await fixtures();
  const inspectPort = await freePort();
  const child = await startService(PORT, { FETCH_ALLOW_PRIVATE: 'true', WORKERS: '2', WORKER_HEAP_MB: String(SOAK_WORKER_HEAP_MB), NODE_OPTIONS: `--inspect=127.0.0.1:${inspectPort}` });
  const pid = child.pid!;
  const rssStart = rssMb(pid);
  const heapStart = await heapAfterGc(inspectPort);
  const reqs = mix(fx.url);
  const heavy = hostile();
  let hostileCalls = 0;
  let hostileBad = 0;
  let total = 0;
  let fiveXX = 0;
  let connErrors = 0;
  let notFound = 0;
  const statuses = new Map<number, number>();
  const samples: string[] = [];
  const healthMs: number[] = [];
  let deadline = 0;

  const worker = async (id: number) => {
    let i = id;
    while (Date.now() < deadline) {
      const r = reqs[i++ % reqs.length]!();
      try {
        const res = await fetch(base + r.path, {
          method: r.method,
          headers: { ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}), ...r.headers },
          body: r.body !== undefined ? JSON.stringify(r.body) : undefined,
          redirect: 'manual',
        });
        total++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const text = await res.text();
        if (res.status >= 500) {
          fiveXX++;
          if (samples.length < 5) samples.push(`${r.method} ${r.path} → ${res.status} ${text.slice(0, 200)}`);
        } else if (res.status === 404) notFound++;
        else if (res.status < 300 && r.ack) r.ack(JSON.parse(text) as Record<string, unknown>);
      } catch (err) {
        connErrors++;
        if (samples.length < 5) samples.push(`${r.method} ${r.path} → ${String(err)}`);
      }
    }
  };
  const hostileWorker = async (id: number) => {
    let i = id;
    while (Date.now() < deadline) {
      const r = heavy[i++ % heavy.length]!();
      try {
        const res = await fetch(base + r.path, { method: r.method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(r.body) });
        await res.text();
        hostileCalls++;
        if (res.status >= 500) {
          hostileBad++;
          if (samples.length < 5) samples.push(`hostile ${r.path} → ${res.status}`);
        }
      } catch (err) {
        connErrors++;
        if (samples.length < 5) samples.push(`hostile ${r.path} → ${String(err)}`);
      }
    }
  };
  const prober = async () => {
    while (Date.now() < deadline) {
      const t0 = performance.now();
      try {
        await (await fetch(`${base}/healthz`)).text();
        healthMs.push(performance.now() - t0);
      } catch {
        connErrors++;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const half = async () => {
    deadline = Date.now() + (SECONDS * 1000) / 2;
    const before = total;
    await Promise.all([...Array.from({ length: CLIENTS }, (_, i) => worker(i)), hostileWorker(0), hostileWorker(1), prober()]);
    return total - before;
  };
  const firstRequests = await half();
  const heapMid = await heapAfterGc(inspectPort);
  const secondRequests = await half();
  const heapEnd = await heapAfterGc(inspectPort);
  const rssEnd = rssMb(pid);
  const perRequest = [(heapMid - heapStart) / Math.max(1, firstRequests), (heapEnd - heapMid) / Math.max(1, secondRequests)] as const;
  const heapBounded = heapEnd - heapMid < HEAP_NOISE_MB * 2 ** 20 || perRequest[1] < perRequest[0] / 2;

  // Every acknowledged link and task is still readable.
  let lostLinks = 0;
  for (const code of links) {
    const r = await fetch(`${base}/api/shorten?code=${code}`);
    if (r.status !== 200) lostLinks++;
    await r.text();
  }
  let lostTasks = 0;
  const ids = new Set<string>();
  for (let a = 0; a < AGENTS; a++) {
    const listed = (await (await fetch(`${base}/api/cron-task?agent_id=soak-${a}`)).json()) as { tasks?: Array<{ task_id: string }> };
    for (const t of listed.tasks ?? []) ids.add(t.task_id);
  }
  for (const id of tasks) if (!ids.has(id)) lostTasks++;

  child.kill('SIGTERM');
  fx.close();
  healthMs.sort((a, b) => a - b);
  const p99 = healthMs.length ? healthMs[Math.min(healthMs.length - 1, Math.floor(healthMs.length * 0.99))]! : NaN;
  // A 404 means a route of the mix is missing: every tool must answer.
  const ok = fiveXX === 0 && hostileBad === 0 && connErrors === 0 && notFound === 0 && lostLinks === 0 && lostTasks === 0 && rssEnd - rssStart < RSS_GROWTH_LIMIT_MB && heapBounded;
  const summary = {
    ok,
    seconds: SECONDS,
    clients: CLIENTS,
    requests: total,
    rps: Math.round(total / SECONDS),
    '5xx': fiveXX,
    connErrors,
    notFound,
    links: links.length,
    lostLinks,
    tasks: tasks.length,
    lostTasks,
    rssStartMb: rssStart,
    rssEndMb: rssEnd,
    // Live main heap after a full GC: at start, after the first half, after the second.
    heapAfterGcMb: [mb(heapStart), mb(heapMid), mb(heapEnd)],
    halves: [firstRequests, secondRequests],
    heapBytesPerRequest: perRequest.map(Math.round),
    heapBounded,
    healthzP99Ms: +p99.toFixed(1),
    hostileCalls,
    hostile5xx: hostileBad,
    statuses: Object.fromEntries(statuses),
  };
  for (const s of samples) process.stderr.write(`soak sample: ${s}\n`);
  console.log(`soak: ${ok ? 'PASS' : 'FAIL'} ${JSON.stringify(summary)}`);
  return ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error('soak: FAIL', err);
    process.exit(1);
  },
);
