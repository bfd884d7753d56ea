// `npx -y devtoolbox-mcp stdio` works: the landing page and README told MCP clients to run
// `npx devtoolbox stdio`, but npx resolves a package name and this package is devtoolbox-mcp
// (a stranger's "devtoolbox" would run instead). Here: npm pack → install of the tarball into a
// temp prefix, offline (the dependencies come from the npm cache, pinned by the project's lockfile) → the SDK's stdio client
// launches exactly the documented command and calls a tool.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpSnippets } from '../src/docs/pages.js';
import { tempDir } from './harness.js';

const root = path.join(import.meta.dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
let dir: string;
let prefix: string;

beforeAll(() => {
  dir = tempDir('dtb-pack-');
  // dist/ is what the tarball ships (npm test builds first; build here when it is missing).
  if (!fs.existsSync(path.join(root, 'dist', 'main.js'))) execFileSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  const out = execFileSync(npm, ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], { cwd: root, encoding: 'utf8' });
  const tarball = path.join(dir, out.trim().split('\n').pop()!);
  prefix = path.join(dir, 'prefix');
  fs.mkdirSync(prefix);
  // Offline, npm cannot resolve versions (the cache holds tarballs, not registry metadata): the
  // prefix gets a lockfile made of the project's own (its non-dev packages) plus the tarball,
  // and `npm ci --offline` installs exactly that from the cache.
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string>; bin: Record<string, string>; license: string; engines: unknown };
  const spec = `file:${path.basename(tarball)}`;
  fs.copyFileSync(tarball, path.join(prefix, path.basename(tarball)));
  const packages: Record<string, unknown> = {
    '': { dependencies: { 'devtoolbox-mcp': spec } },
    'node_modules/devtoolbox-mcp': { version: pkg.version, resolved: spec, license: pkg.license, dependencies: pkg.dependencies, bin: pkg.bin, engines: pkg.engines },
  };
  for (const [k, v] of Object.entries(lock.packages)) {
    if (!k.startsWith('node_modules/') || v.dev) continue;
    // An entry without its tarball URL would make npm ask the registry which one it is.
    const name = k.slice(k.lastIndexOf('node_modules/') + 'node_modules/'.length);
    packages[k] = v.resolved || v.link ? v : { ...v, resolved: `https://registry.npmjs.org/${name}/-/${name.split('/').pop()}-${String(v.version)}.tgz` };
  }
  fs.writeFileSync(path.join(prefix, 'package.json'), JSON.stringify({ private: true, dependencies: { 'devtoolbox-mcp': spec } }));
  fs.writeFileSync(path.join(prefix, 'package-lock.json'), JSON.stringify({ name: 'prefix', lockfileVersion: 3, requires: true, packages }));
  execFileSync(npm, ['ci', '--offline', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: prefix, stdio: ['ignore', 'ignore', 'inherit'] });
}, 240_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('documents npx -y devtoolbox-mcp stdio (the package name, not a bare "devtoolbox")', () => {
    const stdio = JSON.parse(mcpSnippets('http://x').stdio) as { mcpServers: { devtoolbox: { command: string; args: string[] } } };
    expect([stdio.mcpServers.devtoolbox.command, ...stdio.mcpServers.devtoolbox.args]).toStrictEqual(['npx', '-y', 'devtoolbox-mcp', 'stdio']);
    const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string; bin: Record<string, string>; scripts: Record<string, string> };
    expect(pkg.name).toBe('devtoolbox-mcp');
    expect(pkg.bin['devtoolbox-mcp']).toBeDefined();
    expect(pkg.scripts.prepare).toBeDefined();
    expect(fs.readFileSync(path.join(root, 'README.md'), 'utf8')).not.toMatch(/npx devtoolbox\b/);
  });

  it('npm pack → offline install of the tarball → `npx -y devtoolbox-mcp stdio` serves an MCP client', async () => {
    expect(fs.existsSync(path.join(prefix, 'node_modules', '.bin', 'devtoolbox-mcp'))).toBe(true);
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    const transport = new StdioClientTransport({
      command: 'npx',
      args: ['--offline', '-y', 'devtoolbox-mcp', 'stdio'],
      cwd: prefix,
      env: { ...env, DATA_DIR: path.join(dir, 'data'), LOG_LEVEL: 'error', npm_config_update_notifier: 'false' },
      stderr: 'inherit',
    });
    const client = new Client({ name: 'pack-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const tools = await client.listTools();
      expect(tools.tools.map((x) => x.name)).toContain('base_convert');
      const r = await client.callTool({ name: 'base_convert', arguments: { value: '255' } });
      expect(r.isError).toBeFalsy();
      expect(r.structuredContent).toMatchObject({ dec: '255', hex: 'ff', bin: '11111111' });
    } finally {
      await client.close();
    }
  }, 60_000);
});
