/**
 * Issue 37: the key cache on the embedded stores. One process owns the data dir, every writer of
 * a key record bumps the store's key generation after its write (keysChanged), and a cached
 * record is used only while that generation is the one it was read under. A cached key is
 * answered synchronously (no store read, no promise); a write applies to the very next call.
 */
import { Readable, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { closeAfterEach, testServices } from '../../test/harness.js';
import type { Caller } from '../core/caller.js';
import { closeServices, type Services } from '../services.js';
import { exportStore, importStore } from '../state/transfer.js';
import type { Store } from '../state/types.js';
import { Auth, type Credentials } from './auth.js';
import { API_KEYS, createApiKey, setPlan } from './keys.js';

const closing = closeAfterEach();
async function services(env: Record<string, string> = {}): Promise<Services> {
  const s = await testServices({ RATE_LIMITS: 'on', ...env });
  closing({ close: () => closeServices(s) });
  return s;
}

const cred = (key: string): Credentials => ({ peer: '127.0.0.1', authorization: `Bearer ${key}` });

/** resolve(), and whether it answered without a promise (from the cache). */
async function who(auth: Auth, key: string): Promise<{ plan: string; keyId: string | null; sync: boolean }> {
  const r = auth.resolve(cred(key), 'rest');
  const sync = !(r instanceof Promise);
  const c: Caller = await r;
  return { plan: auth.planOf(c), keyId: c.keyId, sync };
}

describe('the key cache on an embedded store (issue 37)', () => {
  it('a key seen once is answered synchronously from the cache; a plan change applies to the very next call', async () => {
    const s = await services();
    const { api_key, record } = await createApiKey(s.store, 'local@example.com', Date.now());
    expect(await who(s.auth, api_key)).toStrictEqual({ plan: 'free', keyId: record.key_id, sync: false });
    expect(await who(s.auth, api_key)).toStrictEqual({ plan: 'free', keyId: record.key_id, sync: true });
    await setPlan(s.store, 'local@example.com', 'pro');
    expect(await who(s.auth, api_key)).toStrictEqual({ plan: 'pro', keyId: record.key_id, sync: false });
    expect(await who(s.auth, api_key)).toStrictEqual({ plan: 'pro', keyId: record.key_id, sync: true });
    expect(s.auth.keys.size).toBe(1);
  });

  it('an import that replaces a key record applies to the next call: the old key is unknown, the new one is found', async () => {
    const s = await services();
    const { api_key: oldKey } = await createApiKey(s.store, 'moved@example.com', Date.now());
    expect((await who(s.auth, oldKey)).sync).toBe(false);
    expect((await who(s.auth, oldKey)).sync).toBe(true);
    const other = await services();
    const { api_key: newKey, record } = await createApiKey(other.store, 'moved@example.com', Date.now());
    let text = '';
    await exportStore(other.store, new Writable({ write: (c, _e, cb) => ((text += String(c)), cb()) }), { known: [API_KEYS] });
    await importStore(s.store, Readable.from([text]), { merge: true, known: [API_KEYS] });
    await expect(who(s.auth, oldKey)).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: 'Unknown API key' });
    expect(await who(s.auth, newKey)).toStrictEqual({ plan: 'free', keyId: record.key_id, sync: false });
  });

  it('the cache is bounded: the oldest record goes first', async () => {
    const s = await services();
    s.auth.keys.max = 3;
    const keys: string[] = [];
    for (let i = 0; i < 5; i++) keys.push((await createApiKey(s.store, `k${i}@example.com`, Date.now())).api_key);
    for (const k of keys) await who(s.auth, k);
    expect(s.auth.keys.size).toBe(3);
    const sync = [];
    for (const k of keys.slice().reverse()) sync.push((await who(s.auth, k)).sync);
    // k4, k3, k2 are held; k1 and k0 are read again (and push out the oldest held).
    expect(sync).toStrictEqual([true, true, true, false, false]);
    expect(s.auth.keys.size).toBe(3);
  });

  it('unknown and malformed keys are never cached', async () => {
    const s = await services();
    for (let i = 0; i < 50; i++) await expect(who(s.auth, `dtb_${String(i).padStart(32, 'q')}`)).rejects.toMatchObject({ code: 'UNAUTHORIZED', message: 'Unknown API key' });
    expect(() => s.auth.resolve(cred('dtb_short'), 'rest')).toThrow('Unknown API key');
    expect(s.auth.keys.size).toBe(0);
  });

  it('the generation is read BEFORE the lookup: a change landing while the lookup is answered is not cached under the new generation', async () => {
    const s = await services();
    const { api_key } = await createApiKey(s.store, 'race@example.com', Date.now());
    // Scripted interleaving: the lookup reads the record, then the writer's whole change (the
    // record, then the generation) runs, then the lookup's answer reaches the reader.
    let lookups = 0;
    const bound = <T extends object>(t: T, p: PropertyKey): unknown => {
      const v = Reflect.get(t, p, t) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    };
    const store: Store = new Proxy(s.store, {
      get(t, p) {
        if (p !== 'collection') return bound(t, p);
        return (def: typeof API_KEYS) => {
          const coll = t.collection(def);
          if (def.name !== API_KEYS.name) return coll;
          return new Proxy(coll, {
            get(c, q) {
              if (q !== 'query') return bound(c, q);
              return async (...args: Parameters<typeof coll.query>) => {
                const found = await c.query(...args);
                if (lookups++ === 0) await setPlan(store, 'race@example.com', 'pro');
                return found;
              };
            },
          });
        };
      },
    });
    const auth = new Auth({ ...s, store });
    // The first call read the record before the change: it runs on free (the change had not
    // completed when it was read). The next call must see pro: a reader that read the generation
    // after the lookup would have cached the free record under the new generation for good.
    expect((await who(auth, api_key)).plan).toBe('free');
    expect(await who(auth, api_key)).toMatchObject({ plan: 'pro', sync: false });
    expect(await who(auth, api_key)).toMatchObject({ plan: 'pro', sync: true });
    expect(lookups).toBe(2);
  });
});
