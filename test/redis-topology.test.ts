/**
 * Issue 37, the connection layer: the store on a Sentinel-watched primary and on a Redis
 * Cluster (started by test/redis-topology.ts) connects, checks every primary, keeps records,
 * and carries signals between two connections; a bad deployment fails at start-up clearly.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { openRedisStore, type RedisStore } from '../src/state/redis/index.js';
import type { CollectionDef } from '../src/state/types.js';
import { keySlot } from '../src/state/redis/slot.js';
import { listenTestApp, type ListeningApp } from './harness.js';
import { describeRedis } from './redis.js';
import { startRedisCluster, startSentinelSet, until, type SentinelSet, type TestCluster } from './redis-topology.js';

interface Note {
  id: string;
  text: string;
}
const NOTES: CollectionDef<Note> = { name: 'notes', key: 'id' };
const log = createLogger('silent');

function logged(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const l = createLogger('silent');
  const capture = (level: string) => (msg: string) => void lines.push(`${level}: ${msg}`);
  return { log: { ...l, warn: capture('warn'), error: capture('error'), info: capture('info') } as typeof l, lines };
}

async function signalsCross(a: RedisStore, b: RedisStore, topic: string): Promise<void> {
  let got = 0;
  b.signals.subscribe(topic, () => got++);
  await until(`a signal on ${topic} from one connection to the other`, () => {
    a.signals.publish(topic);
    return got > 0;
  }, 100, 100);
}

describeRedis('Redis Sentinel: the store follows the named primary', () => {
  let set: SentinelSet;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    set = await startSentinelSet();
  }, 60_000);
  const apps: ListeningApp[] = [];
  afterAll(async () => {
    for (const a of apps) await a.close();
    for (const s of stores) await s.close();
    await set?.stop();
  });

  it('connects through the sentinels, keeps records on the primary and signals between instances', async () => {
    const topology = { kind: 'sentinel' as const, sentinels: set.sentinels.map((s) => ({ host: s.host, port: s.port })), name: set.name };
    const a = await openRedisStore({ topology, prefix: 'sx:', log });
    const b = await openRedisStore({ topology, prefix: 'sx:', log });
    stores.push(a, b);
    await a.collection(NOTES).insert({ id: 'n1', text: 'hello' });
    expect(await b.collection(NOTES).get('n1')).toStrictEqual({ id: 'n1', text: 'hello' });
    // The write is on the primary (and replicated), not only somewhere.
    const primary = await set.primary();
    expect(primary.port).toBe(set.nodes[0]!.port);
    expect(await primary.command('HGET', 'sx:{notes}:data', 'n1')).toBe('{"id":"n1","text":"hello"}');
    expect(a.conn.where).toBe(`primary "${set.name}" via sentinels ${set.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}`);
    await signalsCross(a, b, 'hello');
  });

  it('REDIS_WAIT_REPLICAS: a replicated write resolves once the replica has it; with the replica stopped it fails UNAVAILABLE, other writes do not wait', async () => {
    const topology = { kind: 'sentinel' as const, sentinels: set.sentinels.map((s) => ({ host: s.host, port: s.port })), name: set.name };
    const store = await openRedisStore({ topology, prefix: 'sw:', log, waitReplicas: 1, waitTimeoutMs: 300 });
    stores.push(store);
    const notes = store.collection(NOTES);
    expect(await notes.insert({ id: 'w1', text: 'kept' }, { durability: 'replicated' })).toBe(true);
    // Acknowledged means on the replica: read it there.
    expect(await set.nodes[1]!.command('HGET', 'sw:{notes}:data', 'w1')).toBe('{"id":"w1","text":"kept"}');
    set.nodes[1]!.signal('SIGSTOP');
    try {
      await expect(notes.insert({ id: 'w2', text: 'unsure' }, { durability: 'replicated' })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'only 0 of 1 Redis replicas (REDIS_WAIT_REPLICAS) acknowledged the write within 300 ms' });
      await expect(notes.put({ id: 'w3', text: 'plain' })).resolves.toBe(undefined);
      // Nothing written, nothing to wait for.
      expect(await notes.insert({ id: 'w1', text: 'again' }, { durability: 'replicated' })).toBe(false);
    } finally {
      set.nodes[1]!.signal('SIGCONT');
    }
    expect(await notes.insert({ id: 'w4', text: 'kept' }, { durability: 'replicated' })).toBe(true);
  });

  it('REDIS_WAIT_REPLICAS over HTTP: with the replica stopped, creating a link answers 503 STORAGE_UNAVAILABLE with Retry-After; other calls are served; back once the replica is', async () => {
    const app = await listenTestApp({ env: { ...set.env(), REDIS_PREFIX: 'sh:', REDIS_WAIT_REPLICAS: '1', REDIS_WAIT_TIMEOUT_MS: '300', LOG_LEVEL: 'silent' } });
    apps.push(app);
    const shorten = () => fetch(`${app.url}/api/shorten`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ url: 'https://example.com/w' }) });
    expect((await shorten()).status).toBe(201);
    set.nodes[1]!.signal('SIGSTOP');
    try {
      const r = await shorten();
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('STORAGE_UNAVAILABLE');
      const plain = await fetch(`${app.url}/api/base-convert`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ value: 'ff', from: 'hex' }) });
      expect(plain.status).toBe(200);
    } finally {
      set.nodes[1]!.signal('SIGCONT');
    }
    expect((await shorten()).status).toBe(201);
  });

  it('an unknown primary name fails at start-up with a message naming the variable', async () => {
    const topology = { kind: 'sentinel' as const, sentinels: set.sentinels.map((s) => ({ host: s.host, port: s.port })), name: 'nosuch' };
    await expect(openRedisStore({ topology, log, connectTimeoutMs: 1500 })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/cannot reach Redis at primary "nosuch" via sentinels .* \(REDIS_SENTINELS\)/) });
  });

  it('the start-up checks run on the primary: an evicting primary is refused, by its address', async () => {
    const primary = await set.primary();
    await primary.command('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const topology = { kind: 'sentinel' as const, sentinels: set.sentinels.map((s) => ({ host: s.host, port: s.port })), name: set.name };
      await expect(openRedisStore({ topology, log })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining(`Redis at 127.0.0.1:${primary.port} has maxmemory-policy allkeys-lru`) });
    } finally {
      await primary.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
  });
});

describeRedis('Redis Cluster: the store on three masters', () => {
  let cluster: TestCluster;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    for (const s of stores) await s.close();
    await cluster?.stop();
  });

  const topology = () => ({ kind: 'cluster' as const, nodes: cluster.nodes.slice(0, 2).map((n) => ({ host: n.host, port: n.port })) });

  it('connects from two seeds, keeps records and signals between instances', async () => {
    expect(await cluster.masters()).toHaveLength(3);
    const a = await openRedisStore({ topology: topology(), prefix: 'cx:', log });
    const b = await openRedisStore({ topology: topology(), prefix: 'cx:', log });
    stores.push(a, b);
    for (let i = 0; i < 20; i++) await a.collection(NOTES).insert({ id: `n${i}`, text: `t${i}` });
    expect(await b.collection(NOTES).get('n7')).toStrictEqual({ id: 'n7', text: 't7' });
    expect(await b.collection(NOTES).count()).toBe(20);
    await signalsCross(a, b, 'hello');
  });

  it('our key slot is the cluster\'s (CLUSTER KEYSLOT), so fence keys land on the master meant', async () => {
    const keys = ['ack{0}', 'devtoolbox:{links}:data', 'héllo{wörld}', 'a{}b', 'x'.repeat(300), '{links:17}:ix:creatorDay'];
    for (const k of keys) expect(keySlot(k), k).toBe(Number(await cluster.nodes[0]!.command('CLUSTER', 'KEYSLOT', k)));
  });

  it('REDIS_WAIT_REPLICAS on a cluster: the fence and WAIT go to every master; one replica stopped → UNAVAILABLE', async () => {
    const store = await openRedisStore({ topology: topology(), prefix: 'cw:', log, waitReplicas: 1, waitTimeoutMs: 300 });
    stores.push(store);
    const notes = store.collection(NOTES);
    await expect(notes.insert({ id: 'w1', text: 'kept' }, { durability: 'replicated' })).resolves.toBe(true);
    const [, second] = await cluster.masters();
    const replica = await cluster.replicaOf(second!);
    replica.signal('SIGSTOP');
    try {
      await expect(notes.insert({ id: 'w2', text: 'unsure' }, { durability: 'replicated' })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringMatching(/^only 0 of 1 Redis replicas/) });
    } finally {
      replica.signal('SIGCONT');
    }
    await expect(notes.insert({ id: 'w3', text: 'kept' }, { durability: 'replicated' })).resolves.toBe(true);
  });

  it('the start-up checks run on every master: one evicting master is refused, by its address', async () => {
    const masters = await cluster.masters();
    const third = masters[2]!;
    await third.command('CONFIG', 'SET', 'maxmemory-policy', 'volatile-lru');
    try {
      await expect(openRedisStore({ topology: topology(), log })).rejects.toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining(`Redis at 127.0.0.1:${third.port} has maxmemory-policy volatile-lru`) });
    } finally {
      await third.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('after a failover the checks run again on the new master: /healthz reasons name it until it is fixed', async () => {
    const { log: l, lines } = logged();
    const store = await openRedisStore({ topology: topology(), prefix: 'cy:', log: l });
    stores.push(store);
    const [first] = await cluster.masters();
    const replica = await cluster.replicaOf(first!);
    await replica.command('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-random');
    try {
      await cluster.failover(first!);
      // ioredis learns the new slot owner on its next command or refresh.
      await until('the store to see the unsafe new master', async () => {
        await store.collection(NOTES).count().catch(() => 0);
        const h = store.health();
        return !h.ok && h.reason.includes(`127.0.0.1:${replica.port} has maxmemory-policy allkeys-random`);
      }, 200, 100);
      expect(lines.some((x) => x.startsWith('error: after a Redis failover: Redis at 127.0.0.1:' + replica.port))).toBe(true);
    } finally {
      await replica.command('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
  });
});
