/**
 * A private `redis-server` for tests: started on a unix socket in a temp dir (no TCP port),
 * `--save '' --appendonly no` unless a test asks for AOF. Under CI=true a missing
 * redis-server fails the Redis tests; on a developer machine they are skipped, and say so
 * (test/machine.ts).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { tempDir } from './harness.js';
import { describeNeeding } from './machine.js';

function findRedisServer(): string | null {
  const fromEnv = process.env.REDIS_SERVER_BIN;
  if (fromEnv && fs.existsSync(fromEnv)) return fromEnv;
  for (const p of ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/opt/homebrew/bin/redis-server']) if (fs.existsSync(p)) return p;
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const found = r.stdout?.trim();
  return r.status === 0 && found ? found : null;
}

export const REDIS_SERVER = findRedisServer();

const INSTALL = 'the Redis tests need it (Debian/Ubuntu: apt-get install redis-server; macOS: brew install redis; or REDIS_SERVER_BIN=/path/to/redis-server)';
const MISSING = `redis-server not found: ${INSTALL}`;

/**
 * `describe` for tests that need a real Redis: runs them when redis-server exists; otherwise
 * fails (CI=true) or skips with a clear message.
 */
export function describeRedis(name: string, fn: () => void): void {
  describeNeeding({ program: 'redis-server', present: REDIS_SERVER !== null, install: INSTALL }, name, fn);
}

export interface TestRedis {
  /** `unix:///…/redis.sock` */
  url: string;
  socket: string;
  dir: string;
  /** A fresh key prefix for one test (several tests share one server). */
  prefix(): string;
  /** Stops the server (SIGTERM; SIGKILL with `hard`). */
  stop(hard?: boolean): Promise<void>;
  /** Starts it again on the same socket (data kept only with AOF or an RDB save). */
  start(): Promise<void>;
  /** Sends a signal to the server (SIGSTOP / SIGCONT: a Redis that stops answering). */
  signal(sig: NodeJS.Signals): void;
}

let prefixes = 0;

/** Starts a private redis-server. `extra`: more command-line options (e.g. ['--appendonly', 'yes']). */
export async function startRedis(extra: string[] = []): Promise<TestRedis> {
  if (!REDIS_SERVER) throw new Error(MISSING);
  const dir = tempDir('dtb-redis-');
  const socket = path.join(dir, 'redis.sock');
  let child: ChildProcess | null = null;
  const start = async () => {
    const args = ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning', ...extra];
    const c = spawn(REDIS_SERVER, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    child = c;
    let err = '';
    c.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (c.exitCode !== null) throw new Error(`redis-server exited (${c.exitCode}): ${err}`);
      if (fs.existsSync(socket) && (await canConnect(socket))) return;
      if (Date.now() > deadline) throw new Error(`redis-server did not start within 10 s: ${err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await start();
  const stop = async (hard = false) => {
    const c = child;
    child = null;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill(hard ? 'SIGKILL' : 'SIGTERM');
    await exited;
    fs.rmSync(socket, { force: true });
  };
  process.once('exit', () => {
    const c = child as ChildProcess | null;
    c?.kill('SIGKILL');
  });
  return {
    url: `unix://${socket}`,
    socket,
    dir,
    prefix: () => `t${process.pid}-${++prefixes}-${Math.random().toString(36).slice(2, 8)}:`,
    stop,
    start,
    signal: (sig) => void (child as ChildProcess | null)?.kill(sig),
  };
}

function canConnect(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socket);
    s.once('connect', () => {
      s.end('PING\r\n');
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
