// Before/after of session 10's weighted minute logs (issue 37), in one run: the tree before
// (OLD_TREE: a copy of the old commit's src/, with node_modules beside it) against this one,
// interleaved. Not part of `npm run bench` (it needs the old tree). E.g.:
//   mkdir /tmp/old && git archive 00b1dd3 src package.json tsconfig.json | tar -x -C /tmp/old
//   ln -s "$PWD/node_modules" /tmp/old/node_modules
//   OLD_TREE=/tmp/old node --import tsx bench/minute-log-ab.ts
// 1. Redis: the limit check alone (32 in flight, one subject: one script run per turn) under the
//    bench's huge plan with a full minute prefilled at 20,000 calls/s (old: one member per call;
//    new: one per 13 calls), and under 600 a minute (refused path). EVALSHA µs per run from
//    INFO commandstats, redis-server CPU from /proc. S (seconds per run, 3), R (rounds, 4).
// 2. The embedded limiter: CPU per take() of one subject at steady state, 1 and 20 calls per ms.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Limiter as NewLimiter } from '../src/auth/limiter.js';
import { createLogger } from '../src/log.js';
import * as NEW from '../src/state/redis/index.js';
import { cpuMicros } from './lib.js';

const OLD_TREE = process.env.OLD_TREE;
if (!OLD_TREE) throw new Error('OLD_TREE=<a copy of the old commit with node_modules> is needed (see the top of this file)');
const OLD = (await import(pathToFileURL(path.join(OLD_TREE, 'src/state/redis/index.ts')).href)) as typeof NEW;
const OldLimiter = ((await import(pathToFileURL(path.join(OLD_TREE, 'src/auth/limiter.ts')).href)) as { Limiter: typeof NewLimiter }).Limiter;

const log = createLogger('error');
const SECONDS = Number(process.env.S ?? 3);
const ROUNDS = Number(process.env.R ?? 3);
const FILL_RATE = 20_000; // calls per second the prefilled minute represents (the bench's REST rate)
const PER_RUN = 13; // calls per script run at that rate (session 9's measure)
const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mlog-ab-'));
const socket = path.join(dir, 'redis.sock');
const child = spawn('/usr/bin/redis-server', ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--loglevel', 'warning'], { stdio: 'ignore' });
for (let i = 0; i < 200 && !fs.existsSync(socket); i++) await new Promise((r) => setTimeout(r, 25));
await new Promise<void>((resolve, reject) => {
  const s = net.connect(socket, () => (s.end(), resolve()));
  s.on('error', reject);
});
const url = `unix://${socket}`;
type Store = Awaited<ReturnType<typeof NEW.openRedisStore>>;
const stores: Record<'old' | 'new', Store> = {
  old: (await OLD.openRedisStore({ url, prefix: 'ab-old:', log, quiet: true })) as unknown as Store,
  new: await NEW.openRedisStore({ url, prefix: 'ab-new:', log, quiet: true }),
};

async function evalsha(s: Store) {
  const m = /^cmdstat_evalsha:calls=(\d+),usec=(\d+)/m.exec(await s.conn.redis.info('commandstats'));
  return { calls: Number(m?.[1] ?? 0), usec: Number(m?.[2] ?? 0) };
}

/** A minute log at steady state for FILL_RATE calls/s: old one member per call, new one per PER_RUN calls. */
async function prefill(kind: 'old' | 'new', subject: string) {
  const s = stores[kind];
  const r = s.conn.redis;
  const key = s.key(`rl:${subject}`, kind === 'old' ? 'm' : 'mw');
  await r.del(key, s.key(`rl:${subject}`, 'm'), s.key(`rl:${subject}`, 'mw'));
  const [sec, micro] = await r.time();
  const now = Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
  const calls = FILL_RATE * 59;
  let p = r.pipeline();
  let cum = 0;
  let queued = 0;
  if (kind === 'old') {
    for (let i = 0; i < calls; i++) {
      const t = now - 59_000 + Math.floor(i / FILL_RATE * 1000);
      p.zadd(key, t, `${t}:${i}`);
      if (++queued === 5000) (await p.exec(), (p = r.pipeline()), (queued = 0));
    }
  } else {
    for (let i = 0; i < calls; i += PER_RUN) {
      const t = now - 59_000 + Math.floor(i / FILL_RATE * 1000);
      cum += PER_RUN;
      p.zadd(key, t, `${t}:${String(cum).padStart(15, '0')}:${PER_RUN}`);
      if (++queued === 5000) (await p.exec(), (p = r.pipeline()), (queued = 0));
    }
  }
  p.pexpire(key, 61_000);
  await p.exec();
  return r.zcard(key);
}

async function measure(kind: 'old' | 'new', perMinute: number, subject: string) {
  const s = stores[kind];
  // The script loaded and the prefill's AOF write done before the clock starts.
  await s.windows.rate(subject, perMinute, 999_999_999, true);
  await new Promise((r) => setTimeout(r, 1500));
  let n = 0;
  const e0 = await evalsha(s);
  const c0 = process.cpuUsage();
  const r0 = cpuMicros(child.pid!);
  const end = performance.now() + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        await s.windows.rate(subject, perMinute, 999_999_999, true);
        n++;
      }
    }),
  );
  const c = process.cpuUsage(c0);
  const redisUs = (cpuMicros(child.pid!) - r0) / n;
  const e = await evalsha(s);
  const runs = e.calls - e0.calls;
  return { perSecond: n / SECONDS, nodeUs: (c.user + c.system) / n, redisUs, scriptUs: (e.usec - e0.usec) / runs, perRun: n / runs, redisRunUs: (redisUs * n) / runs };
}

const results: Record<string, Array<Awaited<ReturnType<typeof measure>> & { members: number }>> = {};
for (let i = 0; i < ROUNDS; i++) {
  for (const [plan, perMinute] of [['huge', 999_999_999], ['600/min', 600]] as const) {
    const order: Array<'old' | 'new'> = i % 2 === 0 ? ['old', 'new'] : ['new', 'old'];
    for (const kind of order) {
      const subject = `one-${plan}`;
      const members = plan === 'huge' ? await prefill(kind, subject) : 0;
      const r = await measure(kind, perMinute, subject);
      (results[`${kind} ${plan}`] ??= []).push({ ...r, members });
      console.error(kind, plan, 'round', i, JSON.stringify(r), 'prefilled members', members);
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const [k, rs] of Object.entries(results)) {
  const f = (x: keyof (typeof rs)[number]) => round(median(rs.map((r) => r[x] as number)));
  console.log(`| ${k} (checks/s, node µs, redis-server µs per check, EVALSHA µs per run, checks per run, redis-server µs per run, members) | ${f('perSecond')} | ${f('nodeUs')} | ${f('redisUs')} | ${f('scriptUs')} | ${f('perRun')} | ${f('redisRunUs')} | ${f('members')} |`);
}
console.log('load average', fs.readFileSync('/proc/loadavg', 'utf8').trim());
for (const s of Object.values(stores)) await s.close();
child.kill('SIGKILL');

// 2. The embedded limiter.
const huge = { per_minute: 999_999_999, per_day: 999_999_999 };
function run(L: typeof NewLimiter, perMs: number, seconds: number): number {
  let t = Date.parse('2026-11-27T03:00:00Z');
  const l = new L({ now: () => t });
  for (let ms = 0; ms < 60_000; ms++, t++) for (let i = 0; i < perMs; i++) l.take('a', huge); // fill the minute
  const c0 = process.cpuUsage();
  let n = 0;
  for (let ms = 0; ms < seconds * 1000; ms++, t++) for (let i = 0; i < perMs; i++, n++) l.take('a', huge);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / n;
}
for (const perMs of [1, 20]) {
  const r: Record<string, number[]> = { old: [], new: [] };
  for (let i = 0; i < 3; i++) {
    r.old!.push(run(OldLimiter, perMs, 5));
    r.new!.push(run(NewLimiter, perMs, 5));
  }
  console.log(`${perMs} calls/ms: old ${Math.min(...r.old!).toFixed(3)} µs/take, new ${Math.min(...r.new!).toFixed(3)} µs/take`);
}
