/**
 * server.json, the entry for the official MCP Registry, is valid against the registry's schema
 * (vendored: the network is not needed) and agrees with package.json, the CLI and the config.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_VARS } from '../src/config.js';
import { ICON_SIZES, iconPath, SERVER_ICON } from '../src/docs/icons.js';
import { mcpSnippets } from '../src/docs/pages.js';

const root = path.join(import.meta.dirname, '..');
const SCHEMA_URL = 'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';
const schemaFile = path.join(root, 'vendor/mcp-registry/server.schema.2025-12-11.json');

interface Input {
  name?: string;
  value?: string;
  default?: string;
  isRequired?: boolean;
  isSecret?: boolean;
}
interface ServerJson {
  $schema: string;
  name: string;
  description: string;
  version: string;
  repository: { url: string; source: string };
  icons: Array<{ src: string; mimeType: string; sizes: string[] }>;
  packages: Array<{ registryType: string; identifier: string; version: string; transport: { type: string }; packageArguments: Input[]; environmentVariables: Input[] }>;
  remotes: Array<{ type: string; url: string; headers: Input[] }>;
}

const readJson = (file: string): unknown => JSON.parse(fs.readFileSync(path.join(root, file), 'utf8'));
const server = readJson('server.json') as ServerJson;
const pkg = readJson('package.json') as { name: string; version: string; description: string; mcpName?: string };
let validate: ValidateFunction;

beforeAll(() => {
  const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as object;
  // Strict mode stays on: the schema's only keyword ajv does not know is the OpenAPI-style
  // `example` annotation; anything else unknown should fail loudly.
  const ajv = new Ajv({ allErrors: true });
  ajv.addKeyword('example');
  addFormats.default(ajv);
  validate = ajv.compile(schema);
});

/** server.json with one change, for the cases the schema must reject. */
function broken(change: (copy: ServerJson) => void): ServerJson {
  const copy = structuredClone(server);
  change(copy);
  return copy;
}

describe('server.json', () => {
  it('is valid against the vendored 2025-12-11 schema', () => {
    expect(validate(server), JSON.stringify(validate.errors, null, 2)).toBe(true);
  });

  it('names the vendored schema, which is the published file byte for byte', () => {
    expect(server.$schema).toBe(SCHEMA_URL);
    const schema = JSON.parse(fs.readFileSync(schemaFile, 'utf8')) as { $id: string };
    expect(schema.$id).toBe(SCHEMA_URL);
    expect(createHash('sha256').update(fs.readFileSync(schemaFile)).digest('hex')).toBe('3fba09590c99f61735d234822279f4223fab9e300c0a81e81c91ab62a4114de0');
  });

  it.each([
    ['a name without its namespace', (s: ServerJson) => void (s.name = 'devtoolbox-mcp')],
    ['a description over 100 characters', (s: ServerJson) => void (s.description = 'x'.repeat(101))],
    ['the package version "latest"', (s: ServerJson) => void (s.packages[0]!.version = 'latest')],
    ['a package without its transport', (s: ServerJson) => void delete (s.packages[0] as Partial<ServerJson['packages'][0]>).transport],
    ['a remote URL that is not http(s)', (s: ServerJson) => void (s.remotes[0]!.url = 'ftp://devtoolbox.example.com/mcp')],
    ['an icon that is not a URI', (s: ServerJson) => void (s.icons[0]!.src = 'devtoolbox-48.png')],
    ['a header without its name', (s: ServerJson) => void delete s.remotes[0]!.headers[0]!.name],
    ['a positional argument with neither value nor valueHint', (s: ServerJson) => void delete s.packages[0]!.packageArguments[0]!.value],
  ])('is rejected by the schema with %s (the validation is real)', (_what, change) => {
    expect(validate(broken(change))).toBe(false);
  });

  it('agrees with package.json: name = mcpName, one version, the npm package itself', () => {
    expect(pkg.mcpName).toBe(server.name);
    expect(server.version).toBe(pkg.version);
    expect(server.description).toBe(pkg.description);
    expect(server.packages.map((p) => [p.registryType, p.identifier, p.version, p.transport.type])).toStrictEqual([['npm', pkg.name, pkg.version, 'stdio']]);
  });

  it('launches what the landing page documents: npx -y devtoolbox-mcp stdio', () => {
    const stdio = JSON.parse(mcpSnippets('http://x').stdio) as { mcpServers: { devtoolbox: { args: string[] } } };
    const [npmPackage] = server.packages;
    expect(['-y', npmPackage!.identifier, ...npmPackage!.packageArguments.map((a) => a.value)]).toStrictEqual(stdio.mcpServers.devtoolbox.args);
  });

  it('describes only real configuration variables, with their real defaults', () => {
    const env = server.packages[0]!.environmentVariables;
    expect(env.length).toBeGreaterThan(0);
    for (const v of env) {
      const known = CONFIG_VARS.find((c) => c.name === v.name);
      expect(known, `${v.name} is not in src/config.ts`).toBeDefined();
      if (v.default !== undefined) expect(v.default, v.name).toBe(known!.default);
    }
  });

  it('offers the HTTP endpoint with an optional, secret bearer key', () => {
    expect(server.remotes.map((r) => [r.type, new URL(r.url).pathname])).toStrictEqual([['streamable-http', '/mcp']]);
    expect(server.remotes[0]!.headers.map(({ name, isRequired, isSecret }) => ({ name, isRequired, isSecret }))).toStrictEqual([{ name: 'Authorization', isRequired: false, isSecret: true }]);
  });

  it('keeps the namespace and the repository owner one placeholder (io.github.X ↔ github.com/X)', () => {
    const owner = /^io\.github\.([^/]+)\//.exec(server.name)?.[1];
    expect(owner).toBeDefined();
    expect(server.repository).toStrictEqual({ url: `https://github.com/${owner!}/devtoolbox-mcp`, source: 'github' });
  });

  it('shows the server icon, PNG at both sizes, from the deployment that serves /mcp', () => {
    const origin = new URL(server.remotes[0]!.url).origin;
    expect(server.icons).toStrictEqual(ICON_SIZES.map((size) => ({ src: `${origin}${iconPath(SERVER_ICON, size)}`, mimeType: 'image/png', sizes: [`${size}x${size}`] })));
  });
});
