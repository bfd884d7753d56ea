// STDIO_API_KEY: a stdio launch acting as an API key, so its short links are managed over stdio
// (url_list, url_update, url_delete) and owned by the key as if created over REST. The built
// bin, the real SDK v1 (legacy era) and v2 (2026-07-28) clients, a real data directory.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { createApiKey, generateApiKey, KEY_PATTERN } from '../src/auth/keys.js';
import { API_KEY_SHAPE, ConfigError, loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { openFileStore } from '../src/state/index.js';
import { LINKS } from '../src/tools/shortener/links.js';
import { mcpError, tempDir } from './harness.js';

const root = path.join(import.meta.dirname, '..');
const bin = path.join(root, 'bin', 'devtoolbox.js');
const log = createLogger('silent');

interface Called {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
}
interface AnyClient {
  callTool(p: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

/** A data directory holding one API key; the raw key and its id. */
async function dirWithKey(): Promise<{ dir: string; key: string; keyId: string }> {
  const dir = tempDir('dtb-stdio-key-');
  const store = await openFileStore(dir, { log, purpose: 'test' });
  try {
    const k = await createApiKey(store, 'stdio@example.com', Date.now());
    return { dir, key: k.api_key, keyId: k.record.key_id };
  } finally {
    await store.close();
  }
}

function env(dir: string, key?: string): Record<string, string> {
  const e: Record<string, string> = { ...(process.env as Record<string, string>), DATA_DIR: dir, LOG_LEVEL: 'warn' };
  delete e.STDIO_API_KEY;
  if (key !== undefined) e.STDIO_API_KEY = key;
  return e;
}

async function connect(era: 'legacy' | 'modern', e: Record<string, string>): Promise<AnyClient> {
  const params = { command: process.execPath, args: [bin, 'stdio'], env: e, stderr: 'pipe' as const };
  if (era === 'legacy') {
    const c = new ClientV1({ name: 'stdio-key-test', version: '1.0.0' });
    await c.connect(new StdioV1(params));
    return c as unknown as AnyClient;
  }
  const c = new ClientV2({ name: 'stdio-key-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await c.connect(new StdioV2(params));
  expect(c.getProtocolEra()).toBe('modern');
  return c as unknown as AnyClient;
}

async function call(c: AnyClient, name: string, args: Record<string, unknown>): Promise<Called> {
  return (await c.callTool({ name, arguments: args })) as Called;
}

describe('STDIO_API_KEY (configuration)', () => {
  it('takes a key-shaped value and refuses anything else without echoing it', () => {
    expect(API_KEY_SHAPE.source).toBe(KEY_PATTERN.source);
    const key = generateApiKey();
    expect(loadConfig({ STDIO_API_KEY: key }).stdioApiKey).toBe(key);
    expect(loadConfig({}).stdioApiKey).toBeNull();
    for (const bad of ['secret-value-123', `${key}x`, 'dtb_short']) {
      expect(() => loadConfig({ STDIO_API_KEY: bad })).toThrow(ConfigError);
      try {
        loadConfig({ STDIO_API_KEY: bad });
      } catch (err) {
        expect((err as Error).message).not.toContain(bad);
      }
    }
  });
});

describe('STDIO_API_KEY (the built bin over stdio)', () => {
  beforeAll(() => {
    expect(fs.existsSync(path.join(root, 'dist', 'main.js')), 'run `npm run build` first (npm test does)').toBe(true);
  });

  for (const era of ['legacy', 'modern'] as const) {
    it(`${era} era: links created over stdio belong to the key and are managed over stdio`, async () => {
      const { dir, key, keyId } = await dirWithKey();
      const c = await connect(era, env(dir, key));
      let code: string;
      try {
        const made = await call(c, 'url_shorten', { url: 'https://example.com/from-stdio', tags: ['stdio'] });
        expect(made.isError).toBeFalsy();
        expect(made.structuredContent).toMatchObject({ managed: true });
        code = String(made.structuredContent!.code);
        const listed = await call(c, 'url_list', { tag: 'stdio' });
        expect(listed.isError).toBeFalsy();
        expect((listed.structuredContent!.links as Array<{ code: string }>).map((l) => l.code)).toStrictEqual([code]);
        const updated = await call(c, 'url_update', { code, url: 'https://example.com/moved' });
        expect(updated.isError).toBeFalsy();
        expect(updated.structuredContent).toMatchObject({ code, url: 'https://example.com/moved' });
      } finally {
        await c.close();
      }
      // Owned by the key as over REST: the stored record names the key's id.
      const store = await openFileStore(dir, { log, purpose: 'test' });
      try {
        const rec = await store.collection(LINKS).get(code);
        expect(rec).toMatchObject({ creatorKeyId: keyId, url: 'https://example.com/moved' });
      } finally {
        await store.close();
      }
      // Without the key the same data directory's links are not the launch's to manage.
      const keyless = await connect(era, env(dir));
      try {
        const listed = await call(keyless, 'url_list', {});
        expect(listed.isError).toBe(true);
        expect(mcpError(listed).code).toBe('UNAUTHORIZED');
        const made = await call(keyless, 'url_shorten', { url: 'https://example.com/keyless' });
        expect(made.structuredContent).toMatchObject({ managed: false });
      } finally {
        await keyless.close();
      }
    }, 60_000);
  }

  it('an unknown key stops the launch with a clear message (exit 2), the key never printed', async () => {
    const { dir } = await dirWithKey();
    const unknown = generateApiKey();
    const r = spawnSync(process.execPath, [bin, 'stdio'], { env: env(dir, unknown), input: '', encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('STDIO_API_KEY is not a key this store knows');
    expect(r.stderr).not.toContain(unknown);
    expect(r.stdout).toBe('');
  });

  it('a malformed key is a configuration error (exit 2), the value never printed', () => {
    const r = spawnSync(process.execPath, [bin, 'stdio'], { env: env(tempDir(), 'not-a-key-at-all-12345'), input: '', encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('configuration error: STDIO_API_KEY must be an API key');
    expect(r.stderr).not.toContain('not-a-key-at-all-12345');
  });
});
