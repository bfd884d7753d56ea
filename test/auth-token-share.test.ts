/**
 * Requests presenting the same access token in one turn of the event loop share one token
 * lookup (as requests with one key do, issue 37), and the next turn reads again, so a token
 * revoked in between is refused (issue 30: a token costs what a key costs).
 */
import { afterAll, expect, it } from 'vitest';
import { createApiKey } from '../src/auth/keys.js';
import type { ApiKeyRecord } from '../src/auth/keys.js';
import { closeServices, createServices, type Services } from '../src/services.js';
import { testConfig } from './harness.js';

const services: Services[] = [];
afterAll(async () => {
  for (const s of services.splice(0)) await closeServices(s);
});

it('one lookup per token per turn; the next turn looks again and sees a revocation', async () => {
  const svc = await createServices(testConfig({ RATE_LIMITS: 'on', LOG_LEVEL: 'silent' }));
  services.push(svc);
  const { record } = await createApiKey(svc.store, 'token-share@example.com', Date.now());
  let lookups = 0;
  let revoked = false;
  svc.auth.tokens = async (token: string): Promise<ApiKeyRecord> => {
    lookups++;
    if (token !== 'tok-1' || revoked) throw Object.assign(new Error('Invalid access token'), { status: 401 });
    return record;
  };
  const cred = { peer: '127.0.0.1', authorization: 'Bearer tok-1' };
  const callers = await Promise.all(Array.from({ length: 10 }, () => svc.auth.resolve(cred, 'rest')));
  expect(lookups).toBe(1);
  expect(callers.map((c) => c.keyId)).toStrictEqual(Array.from({ length: 10 }, () => record.key_id));
  revoked = true;
  await new Promise((r) => setImmediate(r)); // the next turn
  await expect(Promise.resolve().then(() => svc.auth.resolve(cred, 'rest'))).rejects.toThrow();
  expect(lookups).toBe(2);
  // Another token in the same turn as a third is its own lookup.
  revoked = false;
  await new Promise((r) => setImmediate(r));
  const [a, b] = await Promise.allSettled([svc.auth.resolve(cred, 'rest'), svc.auth.resolve({ ...cred, authorization: 'Bearer tok-2' }, 'rest')]);
  expect(a.status).toBe('fulfilled');
  expect(b.status).toBe('rejected');
  expect(lookups).toBe(4);
});
