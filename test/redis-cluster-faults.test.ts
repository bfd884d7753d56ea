/**
 * Issue 37, Cluster faults found by review in session 24.
 *
 * A command whose connection closed after
 * Redis ran it (its reply lost on the way) must not be sent again. ioredis' Cluster client re-sent
 * such commands (`retryDelayOnFailover`): a fresh insert then answered "taken" and an increment
 * counted twice. A TCP proxy in front of one master (announced in its place) swallows one reply
 * and resets the connection; the write must fail as UNAVAILABLE and be applied exactly once.
 */
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createLogger } from '../src/log.js';
import { openRedisStore, type RedisStore } from '../src/state/redis/index.js';
import { CLUSTER_SHARDS, shardOf } from '../src/state/redis/shards.js';
import { keySlot } from '../src/state/redis/slot.js';
import type { CollectionDef } from '../src/state/types.js';
import { describeRedis } from './redis.js';
import { freePort, startRedisCluster, until, type TestCluster, type TopologyNode } from './redis-topology.js';

interface Thing {
  id: string;
  n: number;
}
const THINGS: CollectionDef<Thing> = { name: 'things', key: 'id' };
interface Owned {
  id: string;
  owner: string;
}
const OWNED: CollectionDef<Owned> = { name: 'owned', key: 'id', indexes: ['owner'] };
const log = createLogger('silent');

describeRedis('Cluster faults: a lost reply, a lock connection opened while the cluster is down (issue 37)', () => {
  let cluster: TestCluster;
  let proxy: net.Server | undefined;
  let store: RedisStore | undefined;
  let second: RedisStore | undefined;
  /** The next client chunk holding this text has its reply swallowed and its connection reset. */
  let armed = '';
  let swallowed = 0;
  let target: TopologyNode;
  let proxyPort = 0;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
    target = (await cluster.masters())[2]!;
    proxyPort = await freePort();
    proxy = net.createServer((client) => {
      const server = net.connect(target.port, '127.0.0.1');
      let drop = false;
      client.on('data', (d) => {
        if (armed && d.includes(armed)) {
          drop = true;
          armed = '';
        }
        server.write(d);
      });
      server.on('data', (d) => {
        if (!drop) return void client.write(d);
        swallowed++;
        client.resetAndDestroy();
        server.destroy();
      });
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
      client.on('close', () => server.destroy());
    });
    await new Promise<void>((r) => proxy!.listen(proxyPort, '127.0.0.1', r));
    // The master announces the proxy: clients reach its slots through it.
    await target.command('CONFIG', 'SET', 'cluster-announce-port', String(proxyPort), 'cluster-announce-bus-port', String(target.port + 10_000));
    await until('every node to name the proxy', async () => {
      for (const n of cluster.nodes.filter((x) => x.running)) if (!String(await n.command('CLUSTER', 'NODES')).includes(`:${proxyPort}@`)) return false;
      return true;
    });
  }, 90_000);
  afterAll(async () => {
    await store?.close().catch(() => {});
    await second?.close().catch(() => {});
    for (const n of cluster?.nodes ?? []) n.signal('SIGCONT');
    proxy?.close();
    await cluster?.stop();
  });

  it('an insert and an increment whose replies are lost fail as UNAVAILABLE and are applied once', async () => {
    const prefix = 'lost:';
    store = await openRedisStore({ topology: { kind: 'cluster', nodes: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) }, prefix, log, quiet: true });
    await store.preload([THINGS]);
    const things = store.collection(THINGS);
    const slots = (await target.command('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const mine = slots.filter(([, , [, port]]) => port === proxyPort);
    expect(mine.length).toBeGreaterThan(0);
    let i = 0;
    /** An id whose shard lives on the proxied master. */
    const proxied = (): string => {
      for (;;) {
        const id = `victim${i++}`;
        const slot = keySlot(`${prefix}{things:${shardOf(id, CLUSTER_SHARDS)}}:data`);
        if (mine.some(([a, b]) => slot >= a && slot <= b)) return id;
      }
    };
    const a = proxied();
    armed = a;
    await expect(things.insert({ id: a, n: 1 })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(swallowed).toBe(1);
    expect(await things.get(a)).toStrictEqual({ id: a, n: 1 });
    // Inserted once: a second insert of the id is refused as taken.
    expect(await things.insert({ id: a, n: 2 })).toBe(false);

    const b = proxied();
    expect(await things.insert({ id: b, n: 0 })).toBe(true);
    armed = '"n":1';
    await expect(things.increment(b, 'n', 1, { init: { id: b, n: 0 } })).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    expect(swallowed).toBe(2);
    expect(await things.get(b)).toStrictEqual({ id: b, n: 1 });
  });

  it('the caps\' lock connection opened while the cluster reports itself failed: UNAVAILABLE, then served again, and the store closes', async () => {
    second = await openRedisStore({ topology: { kind: 'cluster', nodes: cluster.nodes.map((n) => ({ host: n.host, port: n.port })) }, prefix: 'down:', log, quiet: true });
    await second.preload([OWNED]);
    const owned = second.collection(OWNED);
    const cap = { within: { index: 'owner' as const, eq: 'alice' }, max: 3 };
    const stopped = (await cluster.masters()).find((n) => n.port !== target.port)!;
    const other = cluster.nodes.find((n) => n !== stopped)!;
    stopped.signal('SIGSTOP');
    try {
      await until('the cluster to report itself failed', async () => String(await other.command('CLUSTER', 'INFO')).includes('cluster_state:fail'), 300, 100);
      // The lock connection's first open: before the fix this never settled (the test timed out).
      await expect(owned.insertCapped({ id: 'a1', owner: 'alice' }, cap)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    } finally {
      stopped.signal('SIGCONT');
    }
    await cluster.ready();
    await until('a capped insert to be served again', async () => {
      try {
        return (await owned.insertCapped({ id: 'a2', owner: 'alice' }, cap)) === 'inserted';
      } catch {
        return false;
      }
    }, 100, 200);
    expect(await owned.get('a2')).toStrictEqual({ id: 'a2', owner: 'alice' });
    await second.close();
    second = undefined;
  }, 60_000);
});
