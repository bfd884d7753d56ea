/**
 * Session 10 (issue 37): the Redis minute log holds ONE weighted member per script run that
 * admitted calls, not one per call. Every answer must still be the one-member-per-call one, call
 * by call: checked against a small reference model (the per-call log, as src/auth/limiter.ts
 * keeps it) for scripted sequences of batches on real Redis and on a Cluster; old members leave
 * with their counts; a log written by the script before (one member per call) is taken over on
 * upgrade; the minute's total stays exact under concurrent batches from three processes.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DAY_MS, MINUTE_MS } from '../src/auth/limiter.js';
import { createLogger } from '../src/log.js';
import { openRedisStore } from '../src/state/redis/index.js';
import type { RedisStore } from '../src/state/redis/store.js';
import type { RateWindowsState } from '../src/state/types.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';
import { startRedisCluster, type TestCluster } from './redis-topology.js';

const log = createLogger('silent');
const ROOT = path.join(import.meta.dirname, '..');

/** The limit script of session 9 (one zset member per call, no total): what runs before an upgrade. */
const SESSION9_RATE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local day = math.floor(now / 86400000)
local perMin = tonumber(ARGV[1])
local perDay = tonumber(ARGV[2])
local k = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - 60000)
local n = redis.call('ZCARD', KEYS[1])
local d = redis.call('HMGET', KEYS[2], 'day', 'n')
local sameDay = tonumber(d[1]) == day
local used = 0
if sameDay then used = tonumber(d[2]) or 0 end
local a = math.min(k, perMin - n, perDay - used)
if a < 0 then a = 0 end
if a > 0 then
  local z = {}
  for i = 1, a do
    z[2 * i - 1] = now
    -- Unique: calls in one millisecond are different members.
    z[2 * i] = string.format('%d:%d', now, n + i - 1)
  end
  redis.call('ZADD', KEYS[1], unpack(z))
  redis.call('PEXPIRE', KEYS[1], 61000)
  if sameDay then
    redis.call('HINCRBY', KEYS[2], 'n', a)
  else
    redis.call('HSET', KEYS[2], 'day', day, 'n', a)
  end
  redis.call('PEXPIRE', KEYS[2], (day + 1) * 86400000 - now + 3600000)
end
local nowS = string.format('%d', now)
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local idx = n + a - perMin
if idx <= 0 then
  return {a, nowS, n, used, first[2] or nowS, first[2] or nowS}
end
local at = redis.call('ZRANGE', KEYS[1], idx, idx, 'WITHSCORES')
return {a, nowS, n, used, first[2] or nowS, at[2] or nowS}`;

/**
 * The reference: one timestamp per call, pruned at 60 s, the calls of a batch taken one after
 * another at the batch's instant. What each call's answer must be.
 */
class PerCallModel {
  log: number[] = [];
  used = 0;
  day = -1;

  /** `k` calls at `now` (0: a look that takes nothing). */
  batch(now: number, k: number, perMin: number, perDay: number): RateWindowsState[] {
    const day = Math.floor(now / DAY_MS);
    if (day !== this.day) {
      this.day = day;
      this.used = 0;
    }
    this.log = this.log.filter((t) => t > now - MINUTE_MS);
    const refused = (allowed: boolean): RateWindowsState => {
      const o = this.log[Math.max(0, this.log.length - perMin)] ?? now;
      return { allowed, now, minuteUsed: this.log.length, first: o, oldestCounted: o, dayUsed: this.used };
    };
    if (k === 0) return [refused(this.log.length < perMin && this.used < perDay)];
    const out: RateWindowsState[] = [];
    for (let i = 0; i < k; i++) {
      if (this.log.length < perMin && this.used < perDay) {
        this.log.push(now);
        this.used++;
        out.push({ allowed: true, now, minuteUsed: this.log.length, first: this.log[0]!, oldestCounted: this.log[0]!, dayUsed: this.used });
      } else out.push(refused(false));
    }
    return out;
  }
}

/** A deterministic generator in [0, 1) (the sequences are the same on every run). */
function lcg(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The calls of one turn: one script call. A look (k = 0) is its own script call. */
async function turn(s: RedisStore, subject: string, k: number, perMin: number, perDay: number): Promise<RateWindowsState[]> {
  if (k === 0) return [await s.windows.rate(subject, perMin, perDay, false)];
  return Promise.all(Array.from({ length: k }, () => s.windows.rate(subject, perMin, perDay, true)));
}

/** Redis's clock in ms (the script's clock). */
async function redisNow(s: RedisStore): Promise<number> {
  const [sec, micro] = await s.conn.redis.time();
  return Number(sec) * 1000 + Math.floor(Number(micro) / 1000);
}

const keys = (s: RedisStore, subject: string) => ({ log: s.key(`rl:${subject}`, 'mw'), day: s.key(`rl:${subject}`, 'd'), old: s.key(`rl:${subject}`, 'm') });

/**
 * The weighted log's members as [score, count], the sum of the counts, and the calls the log
 * says it holds (newest cum minus the one before the oldest call: must equal the sum).
 */
async function weighted(s: RedisStore, subject: string): Promise<{ members: Array<[number, number]>; sum: number; total: number }> {
  const flat = await s.conn.redis.zrange(keys(s, subject).log, 0, -1, 'WITHSCORES');
  const members: Array<[number, number]> = [];
  const cums: number[] = [];
  for (let i = 0; i < flat.length; i += 2) {
    const [, cum, count] = /^\d+:(\d{15}):(\d+)$/.exec(flat[i]!)!;
    members.push([Number(flat[i + 1]), Number(count)]);
    cums.push(Number(cum));
  }
  const sum = members.reduce((a, [, c]) => a + c, 0);
  return { members, sum, total: cums.length === 0 ? 0 : cums.at(-1)! - (cums[0]! - members[0]![1]) };
}

/** One run of the session-9 script for `k` calls: its instant and how many it admitted. */
async function oldScript(s: RedisStore, subject: string, k: number, perMin: number): Promise<{ now: number; admitted: number; minuteBefore: number }> {
  const ks = keys(s, subject);
  const r = (await s.conn.redis.eval(SESSION9_RATE, 2, ks.old, ks.day, String(perMin), '1000000', String(k))) as [number, string, number];
  return { now: Number(r[1]), admitted: r[0], minuteBefore: r[2] };
}

/** The checks that run on one Redis and on a Cluster alike. */
function weightedLogChecks(open: () => Promise<RedisStore>): void {
  it('scripted sequences of batches, downgrades and looks: every answer equals the per-call model, with far fewer members than calls', async () => {
    const s = await open();
    for (const seed of [1, 7, 42]) {
      const subject = `seq-${seed}`;
      const rnd = lcg(seed);
      const model = new PerCallModel();
      const limits = [3, 5, 40, 70, 120, 200, 300, 400, 1000];
      for (let step = 0; step < 230; step++) {
        // First a log of ~150 runs at different instants (more than the 64 members the reset
        // walk reads at a time), then plan changes both ways, looks and the day window.
        const warm = step < 150;
        const perMin = warm ? 1000 : limits[Math.floor(rnd() * limits.length)]!;
        const perDay = step >= 215 ? model.used + Math.floor(rnd() * 3) : 100_000;
        const k = warm ? 1 + Math.floor(rnd() * 4) : Math.floor(rnd() * 9);
        const got = await turn(s, subject, k, perMin, perDay);
        expect(got, `seed ${seed} step ${step}: ${k} calls at ${perMin}/${perDay}`).toStrictEqual(model.batch(got[0]!.now, k, perMin, perDay));
        if (rnd() < 0.4) await sleep(1 + Math.floor(rnd() * 3));
      }
      const w = await weighted(s, subject);
      expect(w.sum).toBe(model.log.length);
      expect(w.total).toBe(model.log.length);
      expect(w.members.length).toBeLessThan(model.log.length / 2);
    }
  });

  it('a refused call’s reset is the per-call answer when the position falls inside a run of many calls, walked from either end', async () => {
    const s = await open();
    const model = new PerCallModel();
    // 70 runs of one call, one run of 100, 70 runs of one call: positions 70–169 share an instant.
    for (const k of [...Array<number>(70).fill(1), 100, ...Array<number>(70).fill(1)]) {
      const got = await turn(s, 'runs', k, 10_000, 100_000);
      expect(got).toStrictEqual(model.batch(got[0]!.now, k, 10_000, 100_000));
      if (k === 1) await sleep(1);
    }
    expect((await weighted(s, 'runs')).members).toHaveLength(141);
    // idx = 240 - perMin: 239 and 170 (from the newest), 100 and 69/70 (the big run's edges), 1.
    for (const perMin of [1, 70, 140, 170, 171, 239]) {
      const got = await turn(s, 'runs', 2, perMin, 100_000);
      expect(got, `per minute ${perMin}`).toStrictEqual(model.batch(got[0]!.now, 2, perMin, 100_000));
    }
  });

  it('old runs leave the log with their counts (a run exactly 60 s old included); an expired log counts nothing', async () => {
    const s = await open();
    const k = keys(s, 'exp');
    const t0 = await redisNow(s);
    const seeded: Array<[number, number]> = [
      [t0 - 90_000, 3],
      [t0 - MINUTE_MS, 2],
      [t0 - 50_000, 4],
      [t0 - 20_000, 1],
      [t0 - 5_000, 5],
    ];
    const model = new PerCallModel();
    model.day = Math.floor(t0 / DAY_MS);
    model.used = 15;
    for (const [t, c] of seeded) model.log.push(...Array<number>(c).fill(t));
    let cum = 1000;
    for (const [t, c] of seeded) await s.conn.redis.zadd(k.log, t, `${t}:${String((cum += c)).padStart(15, '0')}:${c}`);
    await s.conn.redis.hset(k.day, 'day', String(model.day), 'n', '15');
    const look = await turn(s, 'exp', 0, 10, 1000);
    expect(look).toStrictEqual(model.batch(look[0]!.now, 0, 10, 1000));
    expect(look[0]).toMatchObject({ allowed: false, minuteUsed: 10, dayUsed: 15, oldestCounted: t0 - 50_000 });
    expect(await weighted(s, 'exp')).toStrictEqual({ members: [[t0 - 50_000, 4], [t0 - 20_000, 1], [t0 - 5_000, 5]], sum: 10, total: 10 });
    const three = await turn(s, 'exp', 3, 12, 1000);
    expect(three).toStrictEqual(model.batch(three[0]!.now, 3, 12, 1000));
    expect(three.map((x) => x.allowed)).toStrictEqual([true, true, false]);
    const down = await turn(s, 'exp', 0, 4, 1000);
    // idx 12 - 4 = 8: the fourth call of the run of five 5 s ago.
    expect(down).toStrictEqual(model.batch(down[0]!.now, 0, 4, 1000));
    expect(down[0]!.oldestCounted).toBe(t0 - 5_000);
    expect(await s.conn.redis.pttl(k.log)).toBeGreaterThan(50_000);
    expect(await s.conn.redis.pttl(k.day)).toBeGreaterThan(3_500_000);

    // The log expired after 61 s idle while the day hash lives on.
    await s.conn.redis.del(k.log);
    const fresh = await turn(s, 'exp', 0, 5, 1000);
    expect(fresh[0]).toMatchObject({ allowed: true, minuteUsed: 0, dayUsed: 17 });
    const two = await turn(s, 'exp', 2, 5, 1000);
    expect(two.map((x) => [x.allowed, x.minuteUsed])).toStrictEqual([
      [true, 1],
      [true, 2],
    ]);
    expect(await weighted(s, 'exp')).toMatchObject({ sum: 2, total: 2 });
  });

  it('a log written on a clock ahead of this primary’s (a failover, a clock stepped back) still counts its calls: the minute stays exact', async () => {
    const s = await open();
    const k = keys(s, 'skew');
    // The primary before this one ran 3 s ahead: its last run of 10 calls is scored in the future.
    const ahead = (await redisNow(s)) + 3_000;
    await s.conn.redis.zadd(k.log, ahead, `${ahead}:${String(10).padStart(15, '0')}:10`);
    await s.conn.redis.pexpire(k.log, 61_000);
    let admitted = 0;
    for (let t = 0; t < 10; t++) admitted += (await turn(s, 'skew', 10, 20, 1_000_000)).filter((x) => x.allowed).length;
    // 20 a minute, 10 already in the log: 10 more, not 100 (the count read 0 while runs sat below the future one).
    expect(admitted).toBe(10);
    expect(await weighted(s, 'skew')).toMatchObject({ sum: 20, total: 20 });
    const look = await turn(s, 'skew', 0, 20, 1_000_000);
    expect(look[0]).toMatchObject({ allowed: false, minuteUsed: 20 });
  });

  it('upgrade: a per-call log written by the script before is taken over exactly (up to 1024 calls) and left in place for old instances', async () => {
    const s = await open();
    const ks = keys(s, 'up');
    const model = new PerCallModel();
    for (const k of [3, 1, 4, 2, 5]) {
      const r = await oldScript(s, 'up', k, 100);
      expect(r.admitted).toBe(k);
      model.batch(r.now, k, 100, 1_000_000);
      await sleep(2);
    }
    expect(await s.conn.redis.exists(ks.log)).toBe(0);
    const look = await turn(s, 'up', 0, 100, 1_000_000);
    expect(look).toStrictEqual(model.batch(look[0]!.now, 0, 100, 1_000_000));
    expect(look[0]).toMatchObject({ minuteUsed: 15, dayUsed: 15 });
    const four = await turn(s, 'up', 4, 16, 1_000_000);
    expect(four).toStrictEqual(model.batch(four[0]!.now, 4, 16, 1_000_000));
    for (const perMin of [6, 10, 2]) {
      const down = await turn(s, 'up', 0, perMin, 1_000_000);
      expect(down, `per minute ${perMin}`).toStrictEqual(model.batch(down[0]!.now, 0, perMin, 1_000_000));
    }
    // One member per instant of the old log (its calls at one millisecond share one), plus the new run.
    expect(await weighted(s, 'up')).toMatchObject({ members: { length: new Set(model.log).size }, sum: 16, total: 16 });
    expect(new Set(model.log).size).toBe(6);
    // The old log stays for the old instances of a rolling upgrade.
    expect(await s.conn.redis.zcard(ks.old)).toBe(15);

    // Side by side: each version counts its own calls in the minute; the day count is shared.
    const old = await oldScript(s, 'up', 1, 100);
    expect(old).toMatchObject({ admitted: 1, minuteBefore: 15 });
    const after = await turn(s, 'up', 0, 100, 1_000_000);
    expect(after[0]).toMatchObject({ minuteUsed: 16, dayUsed: 17 });
  });

  it('upgrade: a per-call log of more than 1024 calls comes in as at most 256 runs, the count exact and every reset at most one run late, never early', async () => {
    const s = await open();
    const model = new PerCallModel();
    for (let i = 0; i < 300; i++) {
      const r = await oldScript(s, 'big', 5, 100_000);
      model.batch(r.now, 5, 100_000, 1_000_000);
      if (i % 3 === 0) await sleep(1);
    }
    const exact = model.batch(await redisNow(s), 0, 1000, 1_000_000)[0]!;
    const look = (await turn(s, 'big', 0, 1000, 1_000_000))[0]!;
    expect(look).toMatchObject({ allowed: false, minuteUsed: 1500, dayUsed: 1500 });
    // Runs of ceil(1500 / 256) = 6 calls, each at its newest call's time.
    expect(look.oldestCounted).toBeGreaterThanOrEqual(exact.oldestCounted);
    expect(look.oldestCounted).toBeLessThanOrEqual(model.log[500 + 5]!);
    const roomy = (await turn(s, 'big', 0, 2000, 1_000_000))[0]!;
    expect(roomy.first).toBeGreaterThanOrEqual(model.log[0]!);
    expect(roomy.first).toBeLessThanOrEqual(model.log[5]!);
    const w = await weighted(s, 'big');
    expect(w.members).toHaveLength(250);
    expect(w).toMatchObject({ sum: 1500, total: 1500 });
  });
}

describeRedis('the weighted minute log on one Redis (issue 37, session 10)', () => {
  let redis: TestRedis;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const s of stores.splice(0)) await s.close();
    await redis?.stop();
  });
  const open = async (prefix = redis.prefix()) => {
    const s = await openRedisStore({ url: redis.url, prefix, log, quiet: true });
    stores.push(s);
    return s;
  };

  weightedLogChecks(open);

  it('a refused call’s reset reads log₂ N members (a binary search), not the minute: ZRANGE calls counted by Redis for 1000 and 4000 members', async () => {
    const s = await open();
    const zranges = async () => Number(/^cmdstat_zrange:calls=(\d+)/m.exec(await s.conn.redis.info('commandstats'))?.[1] ?? 0);
    const refusedLook = async (subject: string, members: number) => {
      for (let i = 0; i < members; i++) await turn(s, subject, 1, 1_000_000, 1_000_000);
      expect((await weighted(s, subject)).members.length).toBeLessThanOrEqual(members);
      const before = await zranges();
      // The position in the middle of the log: as far from either end as it gets.
      const look = await turn(s, subject, 0, Math.ceil(members / 2), 1_000_000);
      expect(look[0]!.allowed).toBe(false);
      return (await zranges()) - before;
    };
    const small = await refusedLook('few', 1000);
    const large = await refusedLook('many', 4000);
    if (process.env.GROWTH_LOG) console.error(`[zrange] 1000 members: ${small}, 4000: ${large}`);
    // head, tail, then one per halving (12 for 4000 members), then the found member; four
    // times the members, two halvings more (a walk would read four times as many).
    // Redis counts the commands a script runs: the search did happen (9–10 halvings of 1000).
    expect(small).toBeGreaterThanOrEqual(3 + 9);
    expect(large).toBeLessThanOrEqual(3 + 12 + 1);
    expect(large - small).toBeLessThanOrEqual(2);
  });

  it('three processes batching one subject at once: exactly the limit admitted, each count once, the minute total exact', async () => {
    const prefix = redis.prefix();
    const children = Array.from({ length: 3 }, () =>
      spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/limit-burst.ts', redis.url, prefix, 'burst', '1000', '30', '20'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] }),
    );
    const outputs = children.map(
      (c) =>
        new Promise<string>((resolve, reject) => {
          let out = '';
          c.stdout!.on('data', (d: Buffer) => (out += d.toString()));
          c.on('error', reject);
          c.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${code}: ${out}`))));
        }),
    );
    const ready = children.map((c) => new Promise<void>((resolve) => c.stdout!.once('data', () => resolve())));
    await Promise.all(ready);
    for (const c of children) c.stdin!.end('go\n');
    const seen = (await Promise.all(outputs)).map((o) => JSON.parse(o.trim().split('\n').at(-1)!) as number[]);
    expect(seen.flat().sort((a, b) => a - b)).toStrictEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    const s = await open(prefix);
    expect((await turn(s, 'burst', 0, 1000, 1_000_000))[0]).toMatchObject({ allowed: false, minuteUsed: 1000, dayUsed: 1000 });
    const w = await weighted(s, 'burst');
    expect(w).toMatchObject({ sum: 1000, total: 1000 });
    expect(w.members.length).toBeLessThanOrEqual(90);
  }, 60_000);
});

describeRedis('the weighted minute log on a Redis Cluster: three masters (issue 37, session 10)', () => {
  let cluster: TestCluster;
  const stores: RedisStore[] = [];
  let prefixes = 0;
  beforeAll(async () => {
    cluster = await startRedisCluster({ replicasPerMaster: 0 });
  }, 90_000);
  afterAll(async () => {
    for (const s of stores.splice(0)) await s.close();
    await cluster?.stop();
  });
  const open = async (prefix = `mw${++prefixes}:`) => {
    const s = await openRedisStore({ topology: { kind: 'cluster', nodes: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) }, prefix, log, quiet: true });
    stores.push(s);
    return s;
  };

  weightedLogChecks(open);

  it('three instances batching one subject at once: exactly the limit admitted, the minute total exact', async () => {
    const prefix = `mw${++prefixes}:`;
    const nodes = [await open(prefix), await open(prefix), await open(prefix)];
    const all = await Promise.all(
      nodes.map(async (n) => {
        const answers: RateWindowsState[] = [];
        for (let t = 0; t < 10; t++) answers.push(...(await turn(n, 'burst', 30, 500, 1_000_000)));
        return answers;
      }),
    );
    const admitted = all.flat().filter((x) => x.allowed);
    expect(admitted.map((x) => x.minuteUsed).sort((a, b) => a - b)).toStrictEqual(Array.from({ length: 500 }, (_, i) => i + 1));
    expect(await weighted(nodes[0]!, 'burst')).toMatchObject({ sum: 500, total: 500 });
  });
});
