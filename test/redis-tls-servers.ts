/**
 * Redis over TLS for tests (issue 37), from Debian's redis-server (built with OpenSSL): a
 * throw-away CA and certificates made with `openssl` in a temp dir, and one server, a Sentinel
 * set or a Cluster that listen on TLS ports only (`--port 0`), replicate and gossip over TLS
 * and require client certificates unless told otherwise.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import { promisify } from 'node:util';
import { tempDir } from './harness.js';
import { REDIS_SERVER } from './redis.js';
import { freePort, REDIS_CLI, until } from './redis-topology.js';

const run = promisify(execFile);

/** PEM files of one test PKI. */
export interface TestPki {
  dir: string;
  ca: string;
  /** A second CA that signed nothing here: the "wrong CA". */
  otherCa: string;
  /** Server certificate for 127.0.0.1 (IP SAN) and `redis.test`. */
  serverCert: string;
  serverKey: string;
  /** Server certificate for `redis.test` only: dialled by IP it needs REDIS_TLS_SERVERNAME. */
  namedCert: string;
  namedKey: string;
  clientCert: string;
  clientKey: string;
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd: dir, timeout: 30_000 });
}

/** A CA, two server certificates and a client certificate (P-256, valid two days). */
export async function makePki(): Promise<TestPki> {
  const dir = tempDir('dtb-tls-');
  const f = (n: string) => path.join(dir, n);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  for (const ca of ['ca', 'other-ca']) await openssl(dir, 'req', '-x509', ...ec, '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-days', '2', '-subj', `/CN=dtb ${ca}`);
  const sign = async (name: string, san: string) => {
    fs.writeFileSync(f(`${name}.ext`), `subjectAltName=${san}\n`);
    await openssl(dir, 'req', ...ec, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    await openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`);
  };
  await sign('server', 'IP:127.0.0.1,DNS:redis.test');
  await sign('named', 'DNS:redis.test');
  await sign('client', 'DNS:client.test');
  return {
    dir,
    ca: f('ca.crt'),
    otherCa: f('other-ca.crt'),
    serverCert: f('server.crt'),
    serverKey: f('server.key'),
    namedCert: f('named.crt'),
    namedKey: f('named.key'),
    clientCert: f('client.crt'),
    clientKey: f('client.key'),
  };
}

/** A PING (over TLS with the client certificate unless `plain`); true on +PONG. */
function tlsPings(pki: TestPki, port: number, plain = false): Promise<boolean> {
  return new Promise((resolve) => {
    const s = plain ? net.connect(port, '127.0.0.1') : tls.connect({ host: '127.0.0.1', port, ca: fs.readFileSync(pki.ca), cert: fs.readFileSync(pki.clientCert), key: fs.readFileSync(pki.clientKey), checkServerIdentity: () => undefined });
    let got = '';
    s.setTimeout(1000, () => (s.destroy(), resolve(false)));
    s.once(plain ? 'connect' : 'secureConnect', () => s.write('PING\r\n'));
    s.on('data', (d: Buffer) => {
      got += d.toString();
      if (got.includes('\r\n')) {
        s.destroy();
        resolve(got.startsWith('+PONG'));
      }
    });
    s.once('error', () => resolve(false));
  });
}

const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

/** The TLS options of a redis-server (or sentinel) presenting `cert`. */
function tlsArgs(pki: TestPki, cert: 'server' | 'named', authClients = true): string[] {
  return [
    '--tls-cert-file', cert === 'server' ? pki.serverCert : pki.namedCert,
    '--tls-key-file', cert === 'server' ? pki.serverKey : pki.namedKey,
    '--tls-ca-cert-file', pki.ca,
    '--tls-auth-clients', authClients ? 'yes' : 'no',
  ];
}

/** Starts redis-server with `args` and waits until its TLS port (its plain port: `plain`) answers. */
async function startTlsNode(pki: TestPki, port: number, args: string[], plain = false): Promise<ChildProcess> {
  if (!REDIS_SERVER) throw new Error('redis-server not found');
  const log = path.join(pki.dir, `redis-${port}.log`);
  const out = fs.openSync(log, 'a');
  const c = spawn(REDIS_SERVER, args, { stdio: ['ignore', out, out] });
  fs.closeSync(out);
  children.add(c);
  c.once('exit', () => children.delete(c));
  await until(`redis-server on TLS port ${port} to answer (log: ${log})`, async () => {
    if (c.exitCode !== null) throw new Error(`redis-server on ${port} exited (${c.exitCode}): ${fs.readFileSync(log, 'utf8').slice(-2000)}`);
    return tlsPings(pki, port, plain);
  });
  return c;
}

function dataArgs(pki: TestPki, port: number): string[] {
  return ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--dir', pki.dir, '--dbfilename', `dump-${port}.rdb`, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--loglevel', 'warning', '--maxmemory-policy', 'noeviction'];
}

/** Processes started for one deployment; `stop()` kills them. */
export interface TlsDeployment {
  ports: number[];
  /** Sends a signal to the process on `ports[i]` (SIGSTOP / SIGCONT: a node that stops answering). */
  signal(i: number, sig: NodeJS.Signals): void;
  stop(): Promise<void>;
}

async function stopAll(procs: ChildProcess[]): Promise<void> {
  for (const c of procs) {
    c.kill('SIGCONT');
    if (c.exitCode !== null || c.signalCode !== null) continue;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill('SIGKILL');
    await gone;
  }
}

/** One redis-server on a TLS port; `authClients` false = no client certificate asked (managed Redis). */
export async function startTlsRedis(pki: TestPki, authClients: boolean): Promise<TlsDeployment> {
  const port = await freePort();
  const c = await startTlsNode(pki, port, [...dataArgs(pki, port), ...tlsArgs(pki, 'server', authClients)]);
  return { ports: [port], signal: (i, sig) => void [c][i]?.kill(sig), stop: () => stopAll([c]) };
}

/**
 * A primary, one replica (replicating over TLS) and one sentinel (quorum 1) on TLS ports, all
 * presenting the `redis.test` certificate. ports: [primary, replica, sentinel]. `plainSentinel`:
 * the sentinel listens on a plain port (and still reaches the data nodes over TLS).
 */
export async function startTlsSentinel(pki: TestPki, name: string, opts: { plainSentinel?: boolean } = {}): Promise<TlsDeployment> {
  const procs: ChildProcess[] = [];
  try {
    const [p, r, s] = [await freePort(), await freePort(), await freePort()];
    const common = [...tlsArgs(pki, 'named'), '--tls-replication', 'yes'];
    procs.push(await startTlsNode(pki, p, [...dataArgs(pki, p), ...common]));
    procs.push(await startTlsNode(pki, r, [...dataArgs(pki, r), ...common, '--replicaof', '127.0.0.1', String(p)]));
    const conf = path.join(pki.dir, `sentinel-${s}.conf`);
    const listen = opts.plainSentinel ? [`port ${s}`] : ['port 0', `tls-port ${s}`];
    fs.writeFileSync(conf, [...listen, 'bind 127.0.0.1', `dir ${pki.dir}`, `sentinel monitor ${name} 127.0.0.1 ${p} 1`, `sentinel down-after-milliseconds ${name} 1000`, ''].join('\n'));
    procs.push(await startTlsNode(pki, s, [conf, '--sentinel', '--loglevel', 'warning', ...common], opts.plainSentinel));
    await until('the replica to be in sync over TLS', async () => {
      const out = await run(REDIS_CLI!, [...cliTls(pki), '-p', String(p), 'INFO', 'replication'], { timeout: 5000 });
      return out.stdout.includes('connected_slaves:1') && /slave0:.*state=online/.test(out.stdout);
    }, 200, 100);
    // The sentinel learns the replica from the primary's INFO (its TLS port): wait for it.
    await until('the sentinel to know the replica', async () => {
      const out = await run(REDIS_CLI!, [...(opts.plainSentinel ? ['-h', '127.0.0.1'] : cliTls(pki)), '-p', String(s), 'SENTINEL', 'REPLICAS', name], { timeout: 5000 });
      return out.stdout.includes(String(r));
    }, 200, 100);
    return { ports: [p, r, s], signal: (i, sig) => void procs[i]?.kill(sig), stop: () => stopAll(procs) };
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
}

function cliTls(pki: TestPki): string[] {
  return ['--tls', '--cacert', pki.ca, '--cert', pki.clientCert, '--key', pki.clientKey, '-h', '127.0.0.1'];
}

/** Three masters (no replicas) gossiping over TLS (`tls-cluster yes`), `redis.test` certificates. */
export async function startTlsCluster(pki: TestPki): Promise<TlsDeployment> {
  const procs: ChildProcess[] = [];
  const ports: number[] = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort(true);
      ports.push(port);
      procs.push(await startTlsNode(pki, port, [...dataArgs(pki, port), ...tlsArgs(pki, 'named'), '--tls-replication', 'yes', '--tls-cluster', 'yes', '--cluster-enabled', 'yes', '--cluster-config-file', path.join(pki.dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000']));
    }
    await run(REDIS_CLI!, [...cliTls(pki), '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes'], { timeout: 60_000 });
    await until('the TLS cluster to report cluster_state:ok on every node', async () => {
      for (const p of ports) {
        const out = await run(REDIS_CLI!, [...cliTls(pki), '-p', String(p), 'CLUSTER', 'INFO'], { timeout: 5000 });
        if (!out.stdout.includes('cluster_state:ok') || !out.stdout.includes('cluster_known_nodes:3')) return false;
      }
      return true;
    }, 300, 100);
    return { ports, signal: (i, sig) => void procs[i]?.kill(sig), stop: () => stopAll(procs) };
  } catch (err) {
    await stopAll(procs);
    throw err;
  }
}
