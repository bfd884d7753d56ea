// Issue 37: the signals' pub/sub on a Redis Cluster, PUBLISH (broadcast to every node over the
// cluster bus) against SPUBLISH (Redis 7 sharded pub/sub: only the channel's shard). A 3+3
// cluster started here (test/redis-topology.ts); three subscribers (one per instance, as the
// service runs), one publisher; server CPU summed over all six nodes (INFO cpu), interleaved
// rounds, medians. `BENCH_ONLY=cluster-pubsub npm run bench` (opt-in), or standalone:
// `node --import tsx bench/cluster-pubsub.ts`. BENCH_PUBSUB_MESSAGES (default 20000).
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { startRedisCluster, type TopologyNode } from '../test/redis-topology.js';
import { median } from './lib.js';

const round = (x: number, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

async function serverCpu(nodes: TopologyNode[]): Promise<number> {
  let total = 0;
  for (const n of nodes) {
    const info = String(await n.command('INFO', 'cpu'));
    total += Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_user:([\d.]+)/.exec(info)![1]);
  }
  return total;
}

export async function benchClusterPubsub(): Promise<Record<string, unknown>> {
  if (process.argv[1]?.endsWith('run.ts') && !process.env.BENCH_ONLY?.split(',').includes('cluster-pubsub')) return { skipped: 'opt-in: BENCH_ONLY=cluster-pubsub' };
  const messages = Number(process.env.BENCH_PUBSUB_MESSAGES ?? 20_000);
  const cluster = await startRedisCluster();
  const clients: Redis[] = [];
  const client = (n: TopologyNode) => {
    const c = new Redis({ host: n.host, port: n.port, lazyConnect: false });
    clients.push(c);
    return c;
  };
  try {
    const channel = 'devtoolbox:signal:webhooks';
    const slot = Number(await cluster.nodes[0]!.command('CLUSTER', 'KEYSLOT', channel));
    const masters = await cluster.masters();
    let owner: TopologyNode | undefined;
    for (const m of masters) {
      // The slot ranges a master serves follow the eighth field of its own CLUSTER NODES line.
      const mine = String(await m.command('CLUSTER', 'NODES')).split('\n').find((l) => l.includes('myself'))!;
      if (mine.split(' ').slice(8).some((r) => (r.includes('-') ? Number(r.split('-')[0]) <= slot && slot <= Number(r.split('-')[1]) : Number(r) === slot))) owner = m;
    }
    if (!owner) throw new Error('no owner of the channel slot');
    const others = masters.filter((m) => m !== owner);
    const results: Record<string, { ms: number[]; cpuUsPerMsg: number[]; delivered: number[] }> = { publish: { ms: [], cpuUsPerMsg: [], delivered: [] }, spublish: { ms: [], cpuUsPerMsg: [], delivered: [] } };
    for (let r = 0; r < 3; r++) {
      for (const mode of ['publish', 'spublish'] as const) {
        let got = 0;
        // PUBLISH subscribers sit on whichever node they reach (here: each master); SSUBSCRIBE must be on the shard's node.
        const subs = mode === 'publish' ? [client(owner), client(others[0]!), client(others[1]!)] : [client(owner), client(owner), client(owner)];
        for (const s of subs) {
          s.on(mode === 'publish' ? 'message' : 'smessage', () => got++);
          await (mode === 'publish' ? s.subscribe(channel) : s.ssubscribe(channel));
        }
        const pub = client(mode === 'publish' ? others[0]! : owner);
        const cpu0 = await serverCpu(cluster.nodes);
        const t0 = performance.now();
        for (let i = 0; i < messages; i += 100) await Promise.all(Array.from({ length: 100 }, () => (mode === 'publish' ? pub.publish(channel, 'x') : pub.spublish(channel, 'x'))));
        while (got < messages * subs.length && performance.now() - t0 < 30_000) await new Promise((res) => setTimeout(res, 5));
        const ms = performance.now() - t0;
        const cpu = (await serverCpu(cluster.nodes)) - cpu0;
        results[mode]!.ms.push(ms);
        results[mode]!.cpuUsPerMsg.push((cpu * 1e6) / messages);
        results[mode]!.delivered.push(got / subs.length / messages);
        for (const s of [...subs, pub]) s.disconnect();
      }
    }
    const sum = (m: 'publish' | 'spublish') => ({ msgsPerSec: Math.round(messages / (median(results[m]!.ms) / 1000)), serverCpuUsPerMsg: round(median(results[m]!.cpuUsPerMsg)), delivered: median(results[m]!.delivered) });
    const p = sum('publish');
    const s = sum('spublish');
    return { messages, subscribers: 3, nodes: cluster.nodes.length, publish: p, spublish: s, cpuRatioPublishOverSpublish: round(p.serverCpuUsPerMsg / s.serverCpuUsPerMsg) };
  } finally {
    for (const c of clients) c.disconnect();
    await cluster.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(JSON.stringify(await benchClusterPubsub(), null, 2));
