// Growth benchmark (issue 18): the embedded store with BENCH_LINKS short links (default 100000;
// run 300000 and 1000000 by hand), loaded through `importStore` (what `devtoolbox import` runs).
// Then the real server (built: `npm run build` first) on that data dir, beside bare hono in the
// same run: start → ready, heap per link, link creations/s through POST /api/shorten, redirects/s,
// RSS, and the server's event-loop delay (p99/max, perf_hooks.monitorEventLoopDelay) during each load.
// `BENCH_ONLY=growth npm run bench` (not in the default set: over a minute), or standalone:
// `BENCH_LINKS=1000000 node --import tsx bench/growth.ts`. BENCH_SECONDS (per load run, default 6).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { createLogger } from '../src/log.js';
import { openFileStore } from '../src/state/index.js';
import { importStore, EXPORT_FORMAT } from '../src/state/transfer.js';
import { LINKS, type LinkRecord } from '../src/tools/shortener/links.js';
import { freePort, load, median, redirectLoad, root, startProcess, type LoadResult } from './lib.js';

const seconds = () => Number(process.env.BENCH_SECONDS ?? 6);
const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

/**
 * The loop delay histograms' timer period (ms). perf_hooks records the spacing of its ticks; the
 * delay is what lies beyond the period (bench/loop-delay.ts).
 */
const LOOP_RES_MS = 5;
const late = (ns: number) => Math.max(0, ns / 1e6 - LOOP_RES_MS);

/**
 * Loaded into the server process with --import: keeps an event-loop delay histogram, and on
 * SIGUSR2 writes it (or, when the command file says "gc", the heap after a full GC) to a file.
 */
const PROBE = `
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
const h = monitorEventLoopDelay({ resolution: ${LOOP_RES_MS} });
h.enable();
const file = process.env.GROWTH_PROBE;
process.on('SIGUSR2', () => {
  const cmd = fs.readFileSync(file + '.cmd', 'utf8');
  if (cmd === 'gc') { globalThis.gc?.(); globalThis.gc?.(); }
  const m = process.memoryUsage();
  const late = (ns) => Math.max(0, ns / 1e6 - ${LOOP_RES_MS});
  fs.writeFileSync(file, JSON.stringify({ p99: late(h.percentile(99)), max: late(h.max), rss: m.rss, heapUsed: m.heapUsed, external: m.external }));
  h.reset();
});
`;

interface Probe {
  p99: number;
  max: number;
  rss: number;
  heapUsed: number;
  /** Off the heap: the segments' file bytes, the id directory (ArrayBuffers moved from the load workers count here, not in arrayBuffers). */
  external: number;
}

async function probe(child: ChildProcess, file: string, cmd: 'gc' | 'eld'): Promise<Probe> {
  fs.rmSync(file, { force: true });
  fs.writeFileSync(`${file}.cmd`, cmd);
  child.kill('SIGUSR2');
  for (let i = 0; i < 1200; i++) {
    await new Promise((r) => setTimeout(r, 50));
    try {
      return JSON.parse(fs.readFileSync(file, 'utf8')) as Probe;
    } catch {
      // not written yet
    }
  }
  throw new Error('the server did not answer the probe');
}

const day = (i: number) => new Date(Date.UTC(2026, 0, 1 + (i % 30))).toISOString().slice(0, 10);

/** An export file's lines for `n` links from 5,000 creators over 30 days (generated, streamed). */
function* exportLines(n: number): Generator<string> {
  yield JSON.stringify({ devtoolbox: 'export', format: EXPORT_FORMAT, exportedAt: new Date().toISOString() }) + '\n';
  yield JSON.stringify({ collection: LINKS.name, key: LINKS.key, segmentSize: LINKS.segmentSize, count: n }) + '\n';
  let chunk = '';
  for (let i = 0; i < n; i++) {
    const creator = i % 2 ? `ip:${(i % 2500).toString(16).padStart(24, '0')}` : `key:k${i % 2500}`;
    const rec: LinkRecord = {
      code: codeOf(i),
      url: `https://example.com/articles/${i}/a-fairly-typical-slug-for-a-long-url?utm_source=bench&utm_medium=test`,
      createdAt: `${day(i)}T12:00:00.000Z`,
      creator,
      creatorKeyId: creator.startsWith('key:') ? creator.slice(4) : null,
      creatorDay: `${creator}|${day(i)}`,
    };
    chunk += `{"collection":"links","record":${JSON.stringify(rec)}}\n`;
    if (chunk.length > 64 * 1024) {
      yield chunk;
      chunk = '';
    }
  }
  yield chunk + JSON.stringify({ end: true, records: n }) + '\n';
}

/** Codes spread over the id space like random ones (a multiplicative hash of i, base 36). */
const codeOf = (i: number) => `g${((i * 2654435761) % 4294967296).toString(36).padStart(7, '0')}${(i % 36).toString(36)}`;

/** Starts the built server with the probe loaded; resolves once it listens (healthz answers at all). */
function startServer(dataDir: string, port: number, probeFile: string): { child: ChildProcess; started: number } {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    ['--expose-gc', '--import', `data:text/javascript,${encodeURIComponent(PROBE)}`, path.join(root, 'bin', 'devtoolbox.js'), 'serve'],
    {
      cwd: root,
      env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, RATE_LIMITS: 'off', LOG_LEVEL: 'error', PUBLIC_BASE_URL: `http://127.0.0.1:${port}`, GROWTH_PROBE: probeFile },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  return { child, started };
}

/** Seconds from spawn until `url` answers `status`. */
async function until(url: string, status: number, started: number, child: ChildProcess): Promise<number> {
  for (;;) {
    try {
      const r = await fetch(url, { redirect: 'manual' });
      await r.arrayBuffer();
      if (r.status === status) return (performance.now() - started) / 1000;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (performance.now() - started > 120_000) throw new Error(`timeout waiting for ${status} from ${url}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The store alone, in this process (no HTTP, so less noise from a busy machine): load time and
 * the longest event-loop stall while loading, 32 concurrent durable creators, reads.
 */
async function storeOnly(dir: string, n: number): Promise<Record<string, number>> {
  const h = monitorEventLoopDelay({ resolution: LOOP_RES_MS });
  const t0 = performance.now();
  const store = await openFileStore(dir, { log: createLogger('error') });
  h.enable();
  await store.preload([LINKS]);
  h.disable();
  const loadSeconds = (performance.now() - t0) / 1000;
  const loadStallMax = late(h.max);
  const links = store.collection(LINKS);
  h.reset();
  h.enable();
  let made = 0;
  const t1 = performance.now();
  const creator = `ip:${'e'.repeat(24)}`;
  await Promise.all(
    Array.from({ length: 32 }, async (_, w) => {
      while (performance.now() - t1 < seconds() * 1000) {
        const code = `s${w}x${made++}`;
        await links.insert({ code, url: 'https://example.com/x', createdAt: new Date().toISOString(), creator, creatorKeyId: null, creatorDay: `${creator}|2026-01-01` });
      }
    }),
  );
  const createSeconds = (performance.now() - t1) / 1000;
  h.disable();
  const createStall = { p99: late(h.percentile(99)), max: late(h.max) };
  const t2 = performance.now();
  for (let i = 0; i < 100_000; i++) await links.get(codeOf((i * 7) % n));
  const getUs = ((performance.now() - t2) * 1000) / 100_000;
  await store.close();
  return {
    storeLoadSeconds: round(loadSeconds),
    storeLoadStallMaxMs: round(loadStallMax, 1),
    storeCreatesPerSec: Math.round(made / createSeconds),
    storeCreateStallP99Ms: round(createStall.p99, 1),
    storeCreateStallMaxMs: round(createStall.max, 1),
    storeGetMicros: round(getUs),
    storeCreated: made,
  };
}

/** The links written through the import path (what `devtoolbox import` does). */
async function importOnly(dir: string, n: number): Promise<Record<string, number>> {
  const t0 = performance.now();
  const store = await openFileStore(dir, { log: createLogger('error') });
  await importStore(store, Readable.from(exportLines(n)), { known: [LINKS] });
  await store.close();
  return { importSeconds: (performance.now() - t0) / 1000 };
}

/** importOnly or storeOnly in a fresh process. */
async function inChild(mode: '--import-only' | '--store-only', dir: string, n: number): Promise<Record<string, number>> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bench', 'growth.ts'), mode, dir, String(n)], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`${mode} run exited with ${code}`);
  return JSON.parse(out) as Record<string, number>;
}


export async function benchGrowth(): Promise<Record<string, unknown>> {
  // Over a minute even at 100k: run only when asked for by name.
  if (process.argv[1]?.endsWith('run.ts') && !process.env.BENCH_ONLY?.split(',').includes('growth')) return { skipped: 'opt-in: BENCH_ONLY=growth' };
  const n = Number(process.env.BENCH_LINKS ?? 100_000);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-growth-'));
  const dir = path.join(tmp, 'data');
  const probeFile = path.join(tmp, 'probe.json');
  const procs: ChildProcess[] = [];
  try {
    // Preload through the import path, timed, in a child process: this one stays small and idle
    // while the server starts (the garbage collector's threads after a 1M import in this
    // process took the server's start-up from ≈ 3.0 s to ≈ 3.5 s on 2 cores).
    const importSeconds = (await inChild('--import-only', dir, n)).importSeconds!;
    const storeFigures = await inChild('--store-only', dir, n);

    // Base heap: the same server on an empty data dir.
    const emptyPort = await freePort();
    const empty = startServer(path.join(tmp, 'empty'), emptyPort, probeFile);
    procs.push(empty.child);
    await until(`http://127.0.0.1:${emptyPort}/healthz`, 200, empty.started, empty.child);
    const baseProbe = await probe(empty.child, probeFile, 'gc');
    const baseHeap = baseProbe.heapUsed;
    procs.pop()!.kill('SIGKILL');

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const server = startServer(dir, port, probeFile);
    procs.push(server.child);
    const sample = Array.from({ length: Math.min(n, 10_000) }, (_, k) => codeOf(Math.floor((k * n) / Math.min(n, 10_000))));
    const healthzSeconds = await until(`${base}/healthz`, 200, server.started, server.child);
    await probe(server.child, probeFile, 'eld'); // from here on: the loop while the links load
    const firstRedirectSeconds = await until(`${base}/s/${sample[sample.length - 1]!}`, 302, server.started, server.child);
    const loading = await probe(server.child, probeFile, 'eld');
    const heap = await probe(server.child, probeFile, 'gc');

    const barePort = await freePort();
    procs.push(await startProcess(['--import', 'tsx', 'bench/bare-hono.ts'], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`));
    // Rounds alternate the cases so that the machine's ups and downs hit each alike; medians.
    const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
    const runs = { bare: [] as number[], create: [] as LoadResult[], redirect: [] as Awaited<ReturnType<typeof redirectLoad>>[], createEld: [] as Probe[], redirectEld: [] as Probe[] };
    for (let r = 0; r < rounds; r++) {
      runs.bare.push((await load('bare hono', { url: `http://127.0.0.1:${barePort}/echo`, body: '{"value":"x"}' })).rps);
      await probe(server.child, probeFile, 'eld');
      runs.create.push(await load('url_shorten', { url: `${base}/api/shorten`, body: '{"url":"https://example.com/some/long/path?q=1"}', connections: 32 }));
      runs.createEld.push(await probe(server.child, probeFile, 'eld'));
      runs.redirect.push(await redirectLoad(base, sample));
      runs.redirectEld.push(await probe(server.child, probeFile, 'eld'));
    }
    const bare = { rps: median(runs.bare) };
    const create = { rps: median(runs.create.map((x) => x.rps)), p99: median(runs.create.map((x) => x.p99)), errors: runs.create.reduce((a, x) => a + x.errors + x.non2xx, 0) };
    const redirect = { rps: median(runs.redirect.map((x) => x.rps)), p99: median(runs.redirect.map((x) => x.p99)), other: runs.redirect.reduce((a, x) => a + x.other, 0) };
    const duringCreate = { p99: median(runs.createEld.map((x) => x.p99)), max: Math.max(...runs.createEld.map((x) => x.max)) };
    const duringRedirect = { p99: median(runs.redirectEld.map((x) => x.p99)), max: Math.max(...runs.redirectEld.map((x) => x.max)), rss: runs.redirectEld.at(-1)!.rss };
    return {
      links: n,
      importSeconds: round(importSeconds, 1),
      importPerSec: Math.round(n / importSeconds),
      ...storeFigures,
      healthzOkSeconds: round(healthzSeconds),
      readySeconds: round(Math.max(healthzSeconds, firstRedirectSeconds)),
      loadLoopDelayMaxMs: round(loading.max, 1),
      heapBytesPerLink: Math.round((heap.heapUsed - baseHeap) / (n + storeFigures.storeCreated!)),
      // The file bytes each segment keeps (its records unchanged since start-up) and the id directory.
      offHeapBytesPerLink: Math.round((heap.external - baseProbe.external) / (n + storeFigures.storeCreated!)),
      heapMB: Math.round(heap.heapUsed / 2 ** 20),
      bareHonoRps: bare.rps,
      creationsPerSec: create.rps,
      creationP99Ms: create.p99,
      creationErrors: create.errors,
      createLoopDelayP99Ms: round(duringCreate.p99, 1),
      createLoopDelayMaxMs: round(duringCreate.max, 1),
      redirectsPerSec: redirect.rps,
      redirectP99Ms: redirect.p99,
      redirectErrors: redirect.other,
      redirectToBareRatio: round(redirect.rps / bare.rps),
      redirectLoopDelayP99Ms: round(duringRedirect.p99, 1),
      redirectLoopDelayMaxMs: round(duringRedirect.max, 1),
      rssMB: Math.round(duringRedirect.rss / 2 ** 20),
      rounds,
    };
  } finally {
    for (const p of procs) p.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv[2] === '--store-only') console.log(JSON.stringify(await storeOnly(process.argv[3]!, Number(process.argv[4]))));
  else if (process.argv[2] === '--import-only') console.log(JSON.stringify(await importOnly(process.argv[3]!, Number(process.argv[4]))));
  else console.log(JSON.stringify(await benchGrowth(), null, 2));
  process.exit(0);
}
