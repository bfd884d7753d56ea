/** The README stays true: its configuration table, and its quick start run as written. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_VARS } from '../src/config.js';
import { tempDir } from './harness.js';

const root = path.resolve(import.meta.dirname, '..');
const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');

describe('README', () => {
  it('the configuration table lists every variable of src/config.ts', () => {
    const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 5));
    expect(CONFIG_VARS.map((v) => v.name).filter((name) => !table.includes(`\`${name}\``))).toStrictEqual([]);
  });
});

/** The bodies of the README's ```bash blocks, in order. */
function bashBlocks(text: string): string[] {
  return [...text.matchAll(/```bash\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** An example: its command and the output the README shows under it (`# …` lines), if any. */
interface Example {
  command: string;
  shown: string | undefined;
}

/**
 * The curl commands of a block, each with its continuation lines (a trailing `\` or a quote
 * still open), and the `# …` lines right below it: the output the README promises.
 */
function curlExamples(block: string): Example[] {
  const out: Example[] = [];
  const lines = block.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.startsWith('curl ')) continue;
    let command = lines[i]!;
    while ((command.endsWith('\\') || (command.split("'").length - 1) % 2 === 1) && i + 1 < lines.length) command += `\n${lines[++i]!}`;
    const shown: string[] = [];
    while (lines[i + 1]?.startsWith('# ')) shown.push(lines[++i]!.replace(/^# ?/, ''));
    out.push({ command, shown: shown.length > 0 ? shown.join('') : undefined });
  }
  return out;
}

/** Timestamps and generated ids differ from run to run. */
function masked(v: unknown): unknown {
  if (typeof v === 'string') return v.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>').replace(/^task_[A-Za-z0-9]+$/, '<task id>');
  if (Array.isArray(v)) return v.map(masked);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, masked(x)]));
  return v;
}

/** A port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

function run(command: string, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', command], { cwd, timeout: 20_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
  });
}

// The README's examples met the keyless limit: after the REST examples and the QR one every
// example answered 429 for a minute, and `my-link` was created twice (409).
describe('the quick start, as a person on their own machine runs it', () => {
  let server: ChildProcess | undefined;
  let port = '';
  const cwd = tempDir('dtb-readme-');

  beforeAll(async () => {
    expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
    // The README's start command: its environment, then `npm start`, which builds and runs this.
    const start = /^(?:npm install && )?((?:[A-Z_]+=\S+ )*)npm start\b/m.exec(bashBlocks(readme)[0] ?? '');
    expect(start, 'the first block of the README starts the server with npm start').not.toBeNull();
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.start).toBe('npm run build && node bin/devtoolbox.js serve');
    const readmeEnv = Object.fromEntries(start![1]!.trim().split(/\s+/).filter(Boolean).map((a) => a.split('=') as [string, string]));
    // Nothing of this process's configuration leaks in: only the README's, a port and a fresh data dir.
    const env: Record<string, string | undefined> = { ...process.env };
    for (const v of CONFIG_VARS) delete env[v.name];
    // A port of its own, named (PORT=0 would make the default PUBLIC_BASE_URL http://localhost:0).
    Object.assign(env, readmeEnv, { PORT: String(await freePort()), DATA_DIR: path.join(cwd, 'data') });
    const child = spawn(process.execPath, ['bin/devtoolbox.js', 'serve'], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
    server = child;
    port = await new Promise<string>((resolve, reject) => {
      let err = '';
      child.stderr!.on('data', (d: Buffer) => {
        err += d.toString();
        const m = /listening on http:\/\/[^\s]+?:(\d+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
    });
  });
  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
  });

  it('every curl example answers, in order, without a 429 or a 409, and prints what the README shows', async () => {
    const examples = bashBlocks(readme).flatMap(curlExamples);
    expect(examples.length).toBeGreaterThan(15);
    let key = 'dtb_…';
    const answers: Array<{ command: string; status: number }> = [];
    const differing: Array<{ command: string; shown: unknown; got: unknown }> = [];
    for (const { command, shown } of examples) {
      // The placeholder key is the one the register example showed.
      // A trailing comment (after the last quote) would swallow the -w appended below.
      const line = command.replace(/\s+#[^'\n]*$/, '').replaceAll(':3000', `:${port}`).replaceAll('dtb_…', key);
      const stdout = await run(`${line} -w '\\n%{http_code}'`, cwd);
      const cut = stdout.lastIndexOf('\n');
      const [body, status] = [stdout.slice(0, cut), Number(stdout.slice(cut + 1))];
      answers.push({ command: command.split('\n')[0]!, status });
      if (command.includes('/api/auth/register')) key = (JSON.parse(body) as { api_key: string }).api_key;
      if (shown !== undefined) {
        const [want, got] = [masked(JSON.parse(shown.replaceAll(':3000', `:${port}`))), masked(JSON.parse(body))];
        if (JSON.stringify(want) !== JSON.stringify(got)) differing.push({ command, shown: want, got });
      }
    }
    expect(answers.filter((a) => a.status === 429 || a.status === 409)).toStrictEqual([]);
    expect(answers.filter((a) => ![200, 201, 302].includes(a.status))).toStrictEqual([]);
    expect(differing).toStrictEqual([]);
  });
});
