// Shortener benchmark (issue 6): link creations/s and redirects/s with 100k links stored, beside
// the bare hono baseline in the same run. Standalone: `node --import tsx bench/shortener.ts`.
// BENCH_SECONDS (per load run, default 6), BENCH_LINKS (links stored first, default 100000).
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { closeServices, createServices } from '../src/services.js';
import { openFileStore } from '../src/state/index.js';
import { LINKS, type LinkRecord } from '../src/tools/shortener/links.js';
import { resolveShortLink } from '../src/tools/shortener/traffic.js';
import { freePort, load, redirectLoad, startProcess } from './lib.js';

const seconds = () => Number(process.env.BENCH_SECONDS ?? 6);


/** Fills a data dir with `n` links through the store (as the server would have written them). */
async function preload(dir: string, n: number): Promise<string[]> {
  const store = await openFileStore(dir, { log: createLogger('error') });
  const links = store.collection(LINKS);
  const codes: string[] = [];
  const createdAt = new Date().toISOString();
  for (let start = 0; start < n; start += 10_000) {
    const batch: Promise<void>[] = [];
    for (let i = start; i < Math.min(n, start + 10_000); i++) {
      const code = `pre${i.toString(36)}`;
      codes.push(code);
      const rec: LinkRecord = {
        code,
        url: `https://example.com/articles/${i}/a-fairly-typical-slug-for-a-long-url?utm_source=bench&utm_medium=test`,
        createdAt,
        creator: 'key:bench',
        creatorKeyId: 'bench',
        creatorDay: `key:bench|${createdAt.slice(0, 10)}`,
      };
      batch.push(links.put(rec));
    }
    await Promise.all(batch);
  }
  await store.close();
  return codes;
}


export async function benchShortener(): Promise<Record<string, number>> {
  const n = Number(process.env.BENCH_LINKS ?? 100_000);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-bench-shortener-'));
  const procs: ChildProcess[] = [];
  try {
    const t0 = performance.now();
    const codes = await preload(dir, n);
    const preloadSeconds = (performance.now() - t0) / 1000;
    const bytes = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).reduce((s, f) => s + fs.statSync(path.join(dir, f)).size, 0);
    const sample = codes.filter((_, i) => i % 97 === 0);

    // Baseline: bare hono answering a small JSON POST, in its own process like the service.
    const barePort = await freePort();
    procs.push(await startProcess(['--import', 'tsx', 'bench/bare-hono.ts'], { PORT: String(barePort) }, `http://127.0.0.1:${barePort}/`));
    const bare = await load('bare hono', { url: `http://127.0.0.1:${barePort}/echo`, body: '{"value":"x"}' });
    procs.pop()!.kill();

    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    procs.push(
      await startProcess(
        ['--import', 'tsx', 'src/main.ts', 'serve'],
        { PORT: String(port), DATA_DIR: dir, RATE_LIMITS: 'off', LOG_LEVEL: 'error', PUBLIC_BASE_URL: base },
        `${base}/healthz`,
      ),
    );
    const create = await load('url_shorten', { url: `${base}/api/shorten`, body: '{"url":"https://example.com/some/long/path?q=1"}', connections: 32 });
    const createSerial = await load('url_shorten, one client', { url: `${base}/api/shorten`, body: '{"url":"https://example.com/x"}', connections: 1, duration: Math.min(3, seconds()) });

    // The redirect through the service's own route when it is mounted; otherwise through a
    // hono route around resolveShortLink on the same data (what the service's route does).
    const probe = await fetch(`${base}/s/${sample[0]!}`, { redirect: 'manual' });
    let redirect: Awaited<ReturnType<typeof redirectLoad>>;
    let viaService = 1;
    if (probe.status === 302) redirect = await redirectLoad(base, sample);
    else {
      viaService = 0;
      procs.pop()!.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 500));
      const services = await createServices(loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'error', PUBLIC_BASE_URL: base }));
      const app = new Hono();
      app.get('/s/:code', async (c) => {
        const url = await resolveShortLink(services, c.req.param('code'));
        return url ? c.redirect(url, 302) : c.json({ success: false }, 404);
      });
      const p2 = await freePort();
      const server = serve({ fetch: app.fetch, port: p2, hostname: '127.0.0.1' });
      redirect = await redirectLoad(`http://127.0.0.1:${p2}`, sample);
      server.close();
      await closeServices(services);
    }
    return {
      linksStored: n,
      preloadSeconds: Math.round(preloadSeconds * 10) / 10,
      dataBytes: bytes,
      bareHonoRps: bare.rps,
      creationsPerSec: create.rps,
      creationP99Ms: create.p99,
      creationErrors: create.errors + create.non2xx,
      creationsPerSecOneClient: createSerial.rps,
      redirectsPerSec: redirect.rps,
      redirectP99Ms: redirect.p99,
      redirectErrors: redirect.other,
      redirectToBareRatio: Math.round((redirect.rps / bare.rps) * 100) / 100,
      redirectViaServiceRoute: viaService,
    };
  } finally {
    for (const p of procs) p.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchShortener();
  console.log(JSON.stringify(r, null, 2));
  process.exit(0);
}
