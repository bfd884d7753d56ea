// Link creates on the file store against how many clients create at once (issue 32): a create
// is a durable write, so it waits for the store's group commit (one flush at a time; the
// writers that arrive during a flush go in the next). The real server in its own process on an
// empty data dir, REST POST /api/shorten keyless, limits off; creates/s, p99 and the server's
// CPU µs per create (/proc/<pid>/stat: the flushes' file system work included) per number of
// connections, after a 2 s warm-up at 32.
//
// `node --import tsx bench/link-creates.ts` — CONNECTIONS (default `1,8,32,128`), SECONDS per
// run (default 3); BENCH_LOADGEN=wrk as the other benches.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cpuMicros, freePort, load, startProcess } from './lib.js';

const connections = (process.env.CONNECTIONS ?? '1,8,32,128').split(',').map(Number);
const seconds = Number(process.env.SECONDS ?? 3);
const body = '{"url":"https://example.com/some/long/path?q=1"}';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dtb-link-creates-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const server = await startProcess(['--import', 'tsx', 'src/main.ts', 'serve'], { PORT: String(port), DATA_DIR: dir, RATE_LIMITS: 'off', LOG_LEVEL: 'error', PUBLIC_BASE_URL: base }, `${base}/healthz`);
try {
  await load('warm-up', { url: `${base}/api/shorten`, body, connections: 32, duration: 2 });
  const runs = [];
  for (const c of connections) {
    const c0 = cpuMicros(server.pid!);
    const r = await load(`creates, ${c} connections`, { url: `${base}/api/shorten`, body, connections: c, duration: seconds });
    const done = r.rps * seconds;
    runs.push({ connections: c, createsPerSec: r.rps, p99Ms: r.p99, serverCpuUsPerCreate: done > 0 ? Math.round((cpuMicros(server.pid!) - c0) / done) : null, errors: r.errors + r.non2xx });
  }
  console.log(JSON.stringify({ seconds, runs }, null, 2));
} finally {
  server.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
