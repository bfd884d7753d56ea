import { describe, expect, it } from 'vitest';
import { closeServices, type Services } from '../services.js';
import { closeAfterEach, testServices } from '../../test/harness.js';
import { ToolError } from '../errors.js';
import { API_KEYS, createApiKey, displayPrefix, findApiKey, findApiKeyById, generateApiKey, hashApiKey, KEY_PATTERN, listApiKeys, normaliseEmail, setPlan } from './keys.js';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const closing = closeAfterEach();
/** Fresh services for one test, closed after it. */
async function services(): Promise<Services> {
  const s = await testServices();
  closing({ close: () => closeServices(s) });
  return s;
}

describe('API keys', () => {
  it('are dtb_ + 32 base62 characters, all different', () => {
    const keys = new Set(Array.from({ length: 2000 }, generateApiKey));
    expect(keys.size).toBe(2000);
    for (const k of keys) expect(k).toMatch(KEY_PATTERN);
    // Every base62 character shows up: the alphabet is used uniformly, not a hex subset.
    const chars = new Set([...keys].flatMap((k) => [...k.slice(4)]));
    expect(chars.size).toBe(62);
  });

  it('store the hash, never the key, and are found by the key', async () => {
    const s = await services();
    const { api_key, record } = await createApiKey(s.store, 'dev@example.com', T0);
    expect(record).toStrictEqual({
      email: 'dev@example.com',
      key_hash: hashApiKey(api_key),
      key_id: record.key_id,
      key_prefix: api_key.slice(0, 8),
      plan: 'free',
      created_at: '2026-11-22T09:00:00.000Z',
    });
    expect(record.key_id).toMatch(/^k_[A-Za-z0-9]{16}$/);
    expect(JSON.stringify(await s.store.collection(API_KEYS).query())).not.toContain(api_key);
    expect(await findApiKey(s.store, api_key)).toStrictEqual(record);
    expect(await findApiKeyById(s.store, record.key_id)).toStrictEqual(record);
  });

  it('a key with one character changed, or malformed, is not found', async () => {
    const s = await services();
    const { api_key } = await createApiKey(s.store, 'dev@example.com', T0);
    const last = api_key.at(-1)!;
    const changed = api_key.slice(0, -1) + (last === 'a' ? 'b' : 'a');
    expect(await findApiKey(s.store, changed)).toBeUndefined();
    expect(await findApiKey(s.store, api_key.toLowerCase() === api_key ? api_key.toUpperCase() : api_key.toLowerCase())).toBeUndefined();
    expect(await findApiKey(s.store, api_key + 'x')).toBeUndefined();
    expect(await findApiKey(s.store, '')).toBeUndefined();
    expect(await findApiKey(s.store, displayPrefix(api_key))).toBeUndefined();
  });

  it('one key per e-mail address, case-insensitively', async () => {
    const s = await services();
    await createApiKey(s.store, normaliseEmail('Dev@Example.com'), T0);
    const again = createApiKey(s.store, normaliseEmail(' dev@example.COM '), T0);
    await expect(again).rejects.toBeInstanceOf(ToolError);
    await expect(again).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('set-plan and list', async () => {
    const s = await services();
    const a = await createApiKey(s.store, 'a@example.com', T0);
    const b = await createApiKey(s.store, 'b@example.com', T0 + 1000);
    expect((await setPlan(s.store, 'b@example.com', 'pro'))?.plan).toBe('pro');
    expect(await setPlan(s.store, 'nobody@example.com', 'pro')).toBeUndefined();
    expect((await listApiKeys(s.store)).map((k) => [k.email, k.plan, k.key_prefix])).toStrictEqual([
      ['a@example.com', 'free', a.record.key_prefix],
      ['b@example.com', 'pro', b.record.key_prefix],
    ]);
  });
});

describe('normaliseEmail', () => {
  it('accepts ordinary addresses, trimmed and lower-cased', () => {
    expect(normaliseEmail('  Jane.Doe+tag@Mail.Example.ORG ')).toBe('jane.doe+tag@mail.example.org');
    expect(normaliseEmail('a@c.com\n')).toBe('a@c.com');
  });

  it.each([
    [undefined, 'is required'],
    ['', 'is required'],
    [42, 'must be a string'],
    [['a@b.co'], 'must be a string'],
    ['plainaddress', 'is not a valid e-mail address'],
    ['a@b', 'is not a valid e-mail address'],
    ['a@@b.com', 'is not a valid e-mail address'],
    ['a b@c.com', 'is not a valid e-mail address'],
    ['a..b@c.com', 'is not a valid e-mail address'],
    ['.a@c.com', 'is not a valid e-mail address'],
    ['a@-c.com', 'is not a valid e-mail address'],
    ['x'.repeat(250) + '@c.com', 'must be at most 254 characters'],
    ['<script>@c.com', 'is not a valid e-mail address'],
  ])('refuses %j with INVALID_INPUT', (raw, message) => {
    let err: unknown;
    try {
      normaliseEmail(raw);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ToolError);
    expect((err as ToolError).toJSON()).toStrictEqual({
      code: 'INVALID_INPUT',
      message: `Invalid input: email ${message}`,
      details: [{ path: 'email', message }],
    });
  });
});
