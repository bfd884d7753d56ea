/**
 * The container files (Dockerfile, .dockerignore, compose.yaml; docs/deploy.md), checked as
 * files: no Docker engine runs here, so nothing is built. The Dockerfile is parsed into its
 * instructions and held to hadolint-style rules (the DL numbers name hadolint's); compose.yaml is
 * parsed as YAML and its settings checked against the service's own configuration.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CONFIG_VARS, loadConfig } from '../src/config.js';
import { ROOT } from './server-process.js';

interface Instruction {
  op: string;
  args: string;
  line: number;
}

/** The instructions of a Dockerfile: comments dropped, `\` continuations joined. */
function instructions(text: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let start = 0;
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (pending === '' && (line === '' || line.startsWith('#'))) return;
    if (pending === '') start = i + 1;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\S+)\s*(.*)$/.exec(full)!;
    out.push({ op: m[1]!.toUpperCase(), args: m[2]!, line: start });
  });
  return out;
}

const dockerfile = instructions(fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'));
const stages = (() => {
  const list: Instruction[][] = [];
  for (const ins of dockerfile) {
    if (ins.op === 'FROM') list.push([]);
    list.at(-1)?.push(ins);
  }
  return list;
})();
const final = stages.at(-1)!;
const args = Object.fromEntries(dockerfile.filter((i) => i.op === 'ARG').map((i) => i.args.split('=') as [string, string]));
const imageOf = (from: Instruction) => from.args.split(/\s+/)[0]!.replace(/^\$\{(\w+)\}$/, (_, name: string) => args[name] ?? '');

describe('Dockerfile', () => {
  it('is multi-stage on a pinned node slim image matching package.json engines (DL3006, DL3007)', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const named = stages.slice(0, -1).map((s) => /\sAS\s+(\S+)$/i.exec(s[0]!.args)?.[1]);
    expect(named.every((n) => n !== undefined)).toBe(true);
    for (const s of stages) {
      const image = imageOf(s[0]!);
      expect(image).toMatch(/^node:\d+\.\d+-[a-z]+-slim$/);
      expect(image).not.toMatch(/:latest$/);
    }
    const [, major, minor] = /^node:(\d+)\.(\d+)/.exec(imageOf(final[0]!))!;
    const engines = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).engines.node as string;
    const [, emaj, emin] = />=(\d+)\.(\d+)/.exec(engines)!;
    expect(Number(major) > Number(emaj) || (Number(major) === Number(emaj) && Number(minor) >= Number(emin))).toBe(true);
    // The OpenTelemetry 2.x line this project pins needs Node 20; 3.x would need 22.
    expect(Number(major)).toBe(20);
  });

  it('installs with npm ci, production dependencies only in what ships (DL3016, DL3060)', () => {
    const runs = dockerfile.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm install\b/.test(r))).toBe(false);
    expect(runs.filter((r) => /\bnpm ci\b/.test(r)).length).toBeGreaterThanOrEqual(1);
    const copiedModules = final.find((i) => i.op === 'COPY' && /\/node_modules\b/.test(i.args))!;
    const from = /--from=(\S+)/.exec(copiedModules.args)![1]!;
    const source = stages.find((s) => new RegExp(`\\sAS\\s+${from}$`, 'i').test(s[0]!.args))!;
    const ci = source.find((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args))!;
    expect(ci.args).toMatch(/--omit=dev/);
    expect(ci.args).toMatch(/npm cache clean --force/);
  });

  it('runs as a non-root user, with JSON-form commands, COPY not ADD, absolute WORKDIR, no cd (DL3002, DL3025, DL3020, DL3000, DL3003)', () => {
    const users = final.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    expect(['root', '0', '0:0']).not.toContain(users.at(-1));
    const userAt = final.findIndex((i) => i.op === 'USER');
    expect(final.findIndex((i) => i.op === 'ENTRYPOINT')).toBeGreaterThan(userAt);
    for (const op of ['CMD', 'ENTRYPOINT']) for (const i of dockerfile.filter((x) => x.op === op)) expect(() => JSON.parse(i.args), `${op} line ${i.line}`).not.toThrow();
    expect(dockerfile.some((i) => i.op === 'ADD')).toBe(false);
    for (const i of dockerfile.filter((x) => x.op === 'WORKDIR')) expect(i.args.startsWith('/')).toBe(true);
    for (const i of dockerfile.filter((x) => x.op === 'RUN')) expect(i.args).not.toMatch(/(^|&&|;)\s*cd\s/);
    expect(dockerfile.filter((i) => i.op === 'MAINTAINER')).toStrictEqual([]);
  });

  it('listens on all interfaces on the exposed port, keeps its data in a volume, stops with SIGTERM and checks /livez', () => {
    const env = final.filter((i) => i.op === 'ENV').map((i) => i.args).join(' ');
    expect(env).toMatch(/\bHOST=0\.0\.0\.0\b/);
    const port = /\bPORT=(\d+)\b/.exec(env)![1]!;
    expect(final.find((i) => i.op === 'EXPOSE')?.args).toBe(port);
    const dataDir = /\bDATA_DIR=(\S+)/.exec(env)![1]!;
    expect(JSON.parse(final.find((i) => i.op === 'VOLUME')!.args)).toStrictEqual([dataDir]);
    expect(final.some((i) => i.op === 'RUN' && i.args.includes(`chown node:node ${dataDir}`))).toBe(true);
    expect(final.find((i) => i.op === 'STOPSIGNAL')?.args).toBe('SIGTERM');
    const health = final.find((i) => i.op === 'HEALTHCHECK')!.args;
    expect(health).toMatch(/--interval=\d+s/);
    expect(health).toMatch(/--timeout=\d+s/);
    expect(health).toContain('/livez');
    // Every variable the image sets is one the service knows, and the set parses.
    const vars = Object.fromEntries([...env.matchAll(/\b([A-Z_]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]));
    for (const name of Object.keys(vars).filter((n) => n !== 'NODE_ENV')) expect(CONFIG_VARS.map((v) => v.name)).toContain(name);
    expect(loadConfig(vars)).toMatchObject({ host: '0.0.0.0', port: Number(port), dataDir });
  });

  it('copies only files that exist, and runs the bin the npm package ships', () => {
    for (const i of dockerfile.filter((x) => x.op === 'COPY' && !x.args.includes('--from='))) {
      const parts = i.args.split(/\s+/).filter((p) => !p.startsWith('--'));
      for (const src of parts.slice(0, -1)) expect(fs.existsSync(path.join(ROOT, src)), `${src} (line ${i.line})`).toBe(true);
    }
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[]; bin: Record<string, string> };
    const copied = final.filter((i) => i.op === 'COPY').map((i) => i.args.split(/\s+/).at(-1)!.replace(/^\.\//, ''));
    for (const f of pkg.files) expect(copied).toContain(f);
    expect(JSON.parse(final.find((i) => i.op === 'ENTRYPOINT')!.args)).toStrictEqual(['node', pkg.bin.devtoolbox]);
  });

  it('.dockerignore keeps local state and dependencies out of the build context', () => {
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const p of ['node_modules', 'dist', 'data', '.git', '.env']) expect(ignored).toContain(p);
  });
});

describe('compose.yaml', () => {
  const compose = parse(fs.readFileSync(path.join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, { image?: string; build?: string; command?: string[]; environment?: Record<string, string>; stop_grace_period?: string; depends_on?: unknown; read_only?: boolean; user?: string }>;
    configs: Record<string, { content: string }>;
  };
  const apps = Object.entries(compose.services).filter(([, s]) => s.build === '.');

  it('runs three instances of the image on one Redis, with known settings and time to drain', () => {
    expect(apps.map(([n]) => n)).toStrictEqual(['app1', 'app2', 'app3']);
    for (const [, s] of apps) {
      const env = s.environment!;
      expect(env.REDIS_URL).toBe('redis://redis:6379');
      for (const name of Object.keys(env)) expect(CONFIG_VARS.map((v) => v.name), name).toContain(name);
      const resolved = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace(/\$\{(\w+):[-?][^}]*\}/g, (_m, n: string) => (n === 'METRICS_TOKEN' ? 'a-metrics-token-of-32-characters' : 'http://localhost:8080'))]));
      const config = loadConfig(resolved);
      const grace = Number(/^(\d+)s$/.exec(s.stop_grace_period!)![1]) * 1000;
      // The drain, then the services' 5 s close, before the SIGKILL.
      expect(grace).toBeGreaterThanOrEqual(config.shutdownTimeoutMs + 5000);
      expect(config.trustedProxies.length).toBeGreaterThan(0);
      expect(s.read_only).toBe(true);
      expect(s.user).toBeUndefined(); // the image's own non-root user
    }
  });

  it('Redis keeps an AOF fsynced every second and never evicts', () => {
    const cmd = compose.services.redis!.command!.join(' ');
    expect(cmd).toMatch(/--appendonly yes/);
    expect(cmd).toMatch(/--appendfsync everysec/);
    expect(cmd).toMatch(/--maxmemory-policy noeviction/);
  });

  it('the balancer spreads over the three, does not buffer SSE, forwards the client address and a request id, and hides /metrics', () => {
    const conf = compose.configs.nginx!.content;
    for (const [name] of apps) expect(conf).toContain(`server ${name}:3000`);
    expect(conf).toMatch(/proxy_buffering off;/);
    expect(conf).toMatch(/proxy_http_version 1\.1;/);
    expect(conf).toMatch(/proxy_set_header X-Forwarded-For \$\$proxy_add_x_forwarded_for;/);
    expect(conf).toMatch(/proxy_set_header X-Request-Id \$\$request_id;/);
    expect(conf).toMatch(/location = \/metrics \{\s*return 404;/);
    // Every nginx variable is escaped from compose's interpolation.
    expect(conf.replace(/\$\$/g, '')).not.toContain('$');
    const limit = /client_max_body_size (\d+)m;/.exec(conf)![1]!;
    expect(Number(limit) * 1024 * 1024).toBeGreaterThanOrEqual(loadConfig({}).largeBodyLimit);
  });
});

describe('docs/deploy.md', () => {
  it('gives Kubernetes probes on /livez (liveness) and /healthz (readiness) and a grace period over the drain', () => {
    const doc = fs.readFileSync(path.join(ROOT, 'docs', 'deploy.md'), 'utf8');
    const yamlBlocks = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const deployment = yamlBlocks.map((b) => parse(b) as { kind?: string; spec?: any }).find((d) => d.kind === 'Deployment')!;
    const pod = deployment.spec.template.spec;
    const c = pod.containers[0];
    expect(c.livenessProbe.httpGet.path).toBe('/livez');
    expect(c.readinessProbe.httpGet.path).toBe('/healthz');
    const timeout = Number(c.env.find((e: { name: string }) => e.name === 'SHUTDOWN_TIMEOUT_MS').value);
    const preStop = Number(/sleep (\d+)/.exec(JSON.stringify(c.lifecycle.preStop))![1]) * 1000;
    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThanOrEqual(timeout + preStop + 5000);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
  });
});
