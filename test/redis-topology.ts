/**
 * Redis deployments for tests, from Debian's redis-server on loopback TCP ports: a Sentinel
 * set (a primary, replicas, three sentinels with fast failover settings) and a Cluster (three
 * masters and three replicas, made by `redis-cli --cluster create`). Each process can be
 * killed (`kill -9`) and restarted; `stop()` ends them all. Gate the tests with
 * `describeRedis` (test/redis.ts): under CI=true a missing redis-server fails them.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { tempDir } from './harness.js';
import { REDIS_SERVER } from './redis.js';

const run = promisify(execFile);

/** redis-cli beside redis-server (the same Debian package, redis-tools). */
export const REDIS_CLI = REDIS_SERVER ? path.join(path.dirname(REDIS_SERVER), 'redis-cli') : null;

export interface HostPort {
  host: string;
  port: number;
}

/** One redis-server (data node or sentinel) of a test deployment. */
export interface TopologyNode extends HostPort {
  /** Its log file (its stderr and stdout), for a failing test's message. */
  log: string;
  readonly running: boolean;
  /** SIGKILL (`kill -9`) by default; resolves once the process is gone. */
  kill(sig?: NodeJS.Signals): Promise<void>;
  /** Sends a signal and returns at once (SIGSTOP / SIGCONT: a node that stops answering). */
  signal(sig: NodeJS.Signals): void;
  /** Starts it again with the same arguments (its config file keeps what it learnt). */
  start(): Promise<void>;
  /** One command on a fresh connection (no retry); the reply. */
  command(...args: (string | number)[]): Promise<unknown>;
}

const all = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of all) c.kill('SIGKILL');
});

/** A loopback port that is free now, and (for a cluster) whose bus port +10000 is free too. */
export async function freePort(withBus = false): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = withBus ? 20_000 + Math.floor(Math.random() * 30_000) : await anyPort();
    if ((await isFree(port)) && (!withBus || (await isFree(port + 10_000)))) return port;
  }
  throw new Error('no free loopback port found');
}

function anyPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.setTimeout(1000, () => (s.destroy(), resolve(false)));
    s.once('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => {
      got += d.toString();
      if (got.includes('\r\n')) {
        s.destroy();
        resolve(got.startsWith('+PONG'));
      }
    });
    s.once('error', () => resolve(false));
  });
}

/** Waits for `ok()` up to `attempts` tries `everyMs` apart; throws `what` past them. */
export async function until(what: string, ok: () => Promise<boolean> | boolean, attempts = 200, everyMs = 50): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    try {
      if (await ok()) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`gave up waiting: ${what}`);
}

/** Starts one redis-server with `args` (a config file path first for sentinels) on `port`. */
async function startNode(dir: string, port: number, args: string[]): Promise<TopologyNode> {
  if (!REDIS_SERVER) throw new Error('redis-server not found');
  const log = path.join(dir, `redis-${port}.log`);
  let child: ChildProcess | null = null;
  const start = async () => {
    const out = fs.openSync(log, 'a');
    const c = spawn(REDIS_SERVER!, args, { stdio: ['ignore', out, out] });
    fs.closeSync(out);
    child = c;
    all.add(c);
    c.once('exit', () => all.delete(c));
    await until(`redis-server on port ${port} to answer (log: ${log})`, async () => {
      if (c.exitCode !== null) throw new Error(`redis-server on port ${port} exited (${c.exitCode}): ${fs.readFileSync(log, 'utf8').slice(-2000)}`);
      return pings(port);
    });
  };
  await start();
  return {
    host: '127.0.0.1',
    port,
    log,
    get running() {
      const c = child as ChildProcess | null;
      return c !== null && c.exitCode === null && c.signalCode === null;
    },
    async kill(sig: NodeJS.Signals = 'SIGKILL') {
      const c = child as ChildProcess | null;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const gone = new Promise((r) => c.once('exit', r));
      c.kill(sig);
      await gone;
      child = null;
    },
    signal: (sig) => void (child as ChildProcess | null)?.kill(sig),
    start,
    command: (...cmd) => command(port, cmd),
  };
}

async function command(port: number, cmd: (string | number)[]): Promise<unknown> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, commandTimeout: 5000, connectTimeout: 2000 });
  r.on('error', () => {});
  try {
    await r.connect();
    return await r.call(String(cmd[0]), ...cmd.slice(1).map(String));
  } finally {
    r.disconnect();
  }
}

/** Options every test data node shares: loopback, no persistence unless asked, quiet. */
function dataArgs(dir: string, port: number, extra: string[]): string[] {
  return ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--dbfilename', `dump-${port}.rdb`, '--appendfilename', `aof-${port}.aof`, '--appenddirname', `aof-${port}`, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning', '--maxmemory-policy', 'noeviction', ...extra];
}

export interface SentinelSet {
  name: string;
  sentinels: TopologyNode[];
  /** The data nodes: [0] is the first primary, the rest its replicas. */
  nodes: TopologyNode[];
  /** The environment that points the service at this set. */
  env(): Record<string, string>;
  /** The primary the sentinels name now. */
  primary(): Promise<TopologyNode>;
  stop(): Promise<void>;
}

/**
 * A primary, `replicas` replicas and three sentinels (quorum 2, down-after 1 s, failover
 * timeout 3 s). Resolves once every sentinel knows the replicas and the other sentinels, so a
 * failover can be voted. `extra`: more options for the data nodes (e.g. ['--appendonly','yes']).
 */
export async function startSentinelSet(opts: { replicas?: number; extra?: string[]; name?: string } = {}): Promise<SentinelSet> {
  const dir = tempDir('dtb-sentinel-');
  const name = opts.name ?? 'dtbmain';
  const replicas = opts.replicas ?? 1;
  const extra = opts.extra ?? [];
  const primaryPort = await freePort();
  const nodes: TopologyNode[] = [await startNode(dir, primaryPort, dataArgs(dir, primaryPort, extra))];
  for (let i = 0; i < replicas; i++) {
    const port = await freePort();
    nodes.push(await startNode(dir, port, [...dataArgs(dir, port, extra), '--replicaof', '127.0.0.1', String(primaryPort)]));
  }
  const sentinels: TopologyNode[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = path.join(dir, `sentinel-${port}.conf`);
    fs.writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${primaryPort} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 3000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    sentinels.push(await startNode(dir, port, [conf, '--sentinel', '--loglevel', 'warning']));
  }
  const set: SentinelSet = {
    name,
    sentinels,
    nodes,
    env: () => ({ REDIS_SENTINELS: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','), REDIS_SENTINEL_NAME: name }),
    async primary() {
      for (const s of sentinels.filter((x) => x.running)) {
        try {
          const [, port] = (await s.command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name)) as [string, string];
          const node = nodes.find((n) => n.port === Number(port));
          if (node) return node;
        } catch {
          // ask the next sentinel
        }
      }
      throw new Error('no sentinel names a primary');
    },
    async stop() {
      for (const n of [...sentinels, ...nodes]) {
      n.signal('SIGCONT');
      await n.kill('SIGKILL');
    }
    },
  };
  try {
    await until('the replicas to be in sync', async () => {
      const info = String(await nodes[0]!.command('INFO', 'replication'));
      return Number(/connected_slaves:(\d+)/.exec(info)?.[1]) === replicas && !/state=(wait_bgsave|send_bulk)/.test(info);
    });
    await until('every sentinel to know the replicas and the other sentinels', async () => {
      for (const s of sentinels) {
        if (((await s.command('SENTINEL', 'REPLICAS', name)) as unknown[]).length !== replicas) return false;
        if (((await s.command('SENTINEL', 'SENTINELS', name)) as unknown[]).length !== 2) return false;
      }
      return true;
    }, 300, 100);
  } catch (err) {
    await set.stop();
    throw err;
  }
  return set;
}

export interface TestCluster {
  nodes: TopologyNode[];
  /** The environment that points the service at this cluster (every node as a seed). */
  env(): Record<string, string>;
  /** The nodes that are masters now, by CLUSTER NODES of a running node. */
  masters(): Promise<TopologyNode[]>;
  /** The replica of `master` now. */
  replicaOf(master: TopologyNode): Promise<TopologyNode>;
  /** `CLUSTER FAILOVER` on a replica of `master`, then waits until it is a master everywhere. */
  failover(master: TopologyNode): Promise<TopologyNode>;
  /** Waits until every running node reports cluster_state:ok. */
  ready(): Promise<void>;
  stop(): Promise<void>;
}

/** CLUSTER NODES of one node: [port, flags, master id or '-', id]. */
async function clusterNodes(node: TopologyNode): Promise<Array<{ id: string; port: number; master: boolean; failed: boolean; of: string }>> {
  const text = String(await node.command('CLUSTER', 'NODES'));
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const [id, addr, flags, of] = line.split(' ');
      return { id: id!, port: Number(/:(\d+)@/.exec(addr!)?.[1]), master: flags!.includes('master'), failed: /fail/.test(flags!), of: of! };
    });
}

/**
 * Three masters and three replicas (`masters`, `replicasPerMaster` to change), node timeout
 * 2 s. Resolves once every node reports cluster_state:ok with all slots assigned.
 */
export async function startRedisCluster(opts: { masters?: number; replicasPerMaster?: number; extra?: string[] } = {}): Promise<TestCluster> {
  if (!REDIS_CLI || !fs.existsSync(REDIS_CLI)) throw new Error('redis-cli not found beside redis-server (Debian: apt-get install redis-tools)');
  const dir = tempDir('dtb-cluster-');
  const masters = opts.masters ?? 3;
  const count = masters * (1 + (opts.replicasPerMaster ?? 1));
  const nodes: TopologyNode[] = [];
  const stop = async () => {
    for (const n of nodes) {
      n.signal('SIGCONT');
      await n.kill('SIGKILL');
    }
  };
  try {
    for (let i = 0; i < count; i++) {
      const port = await freePort(true);
      nodes.push(await startNode(dir, port, [...dataArgs(dir, port, opts.extra ?? []), '--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000']));
    }
    await run(REDIS_CLI, ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(opts.replicasPerMaster ?? 1), '--cluster-yes'], { timeout: 60_000 });
  } catch (err) {
    await stop();
    throw err;
  }
  const byPort = (port: number) => nodes.find((n) => n.port === port);
  const cluster: TestCluster = {
    nodes,
    env: () => ({ REDIS_CLUSTER_NODES: nodes.map((n) => `127.0.0.1:${n.port}`).join(',') }),
    async masters() {
      const seen = await clusterNodes(nodes.find((n) => n.running)!);
      return seen.filter((n) => n.master && !n.failed).map((n) => byPort(n.port)!).filter(Boolean);
    },
    async replicaOf(master) {
      const seen = await clusterNodes(master);
      const id = seen.find((n) => n.port === master.port)!.id;
      const replica = seen.find((n) => n.of === id && !n.failed);
      if (!replica) throw new Error(`no replica of ${master.port}`);
      return byPort(replica.port)!;
    },
    async failover(master) {
      const replica = await cluster.replicaOf(master);
      await replica.command('CLUSTER', 'FAILOVER');
      await until(`${replica.port} to be a master on every node`, async () => {
        for (const n of nodes.filter((x) => x.running)) {
          const seen = await clusterNodes(n);
          if (!seen.find((x) => x.port === replica.port)?.master) return false;
        }
        return true;
      }, 300, 100);
      await cluster.ready();
      return replica;
    },
    async ready() {
      await until('every cluster node to report cluster_state:ok and the same masters and replicas', async () => {
        for (const n of nodes.filter((x) => x.running)) {
          const info = String(await n.command('CLUSTER', 'INFO'));
          if (!info.includes('cluster_state:ok') || !info.includes('cluster_slots_assigned:16384')) return false;
          const seen = (await clusterNodes(n)).filter((x) => !x.failed);
          if (seen.filter((x) => x.master).length !== masters) return false;
          if (seen.filter((x) => !x.master).length !== nodes.filter((x) => x.running).length - masters) return false;
          // A replica still loading its first copy would make WAIT (and a failover) fail.
          const repl = String(await n.command('INFO', 'replication'));
          if (repl.includes('role:master') && /state=(?!online)/.test(repl)) return false;
          if (repl.includes('role:slave') && !repl.includes('master_link_status:up')) return false;
        }
        return true;
      }, 300, 100);
    },
    stop,
  };
  try {
    await cluster.ready();
  } catch (err) {
    await stop();
    throw err;
  }
  return cluster;
}
