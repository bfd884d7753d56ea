/**
 * Issue 30: expired OAuth records (codes, sessions, grants, tokens) are swept from the store, in
 * bounded batches, on both backends; live records and records that never expire stay.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { OAUTH_RECORDS, StoreAdapter, storedId, sweepExpired } from '../src/auth/oauth/adapter.js';
import { createLogger } from '../src/log.js';
import { openFileStore, type Store } from '../src/state/index.js';
import { openRedisStore } from '../src/state/redis/index.js';
import { tempDir } from './harness.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

const log = createLogger('silent');
const open: Store[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close().catch(() => {});
});
let redisServer: Promise<TestRedis> | undefined;
afterAll(async () => {
  if (redisServer) await (await redisServer).stop();
});

const stores = {
  file: async () => openFileStore(tempDir(), { log }),
  redis: async () => {
    const server = await (redisServer ??= startRedis());
    return openRedisStore({ url: server.url, prefix: server.prefix(), log, quiet: true });
  },
};

for (const [kind, make] of Object.entries(stores)) {
  (kind === 'redis' ? describeRedis : describe)(`sweeping expired OAuth records (${kind})`, () => {
    it('deletes what expired, at most a batch per sweep; keeps live records and those that never expire', async () => {
      const store = await make();
      open.push(store);
      let now = 1_700_000_000_000;
      const at = () => now;
      // Written at `now` with these lifetimes (seconds); Client has none.
      await new StoreAdapter('AuthorizationCode', store, at).upsert('code-1', { grantId: 'g1' }, 60);
      await new StoreAdapter('AccessToken', store, at).upsert('at-1', { grantId: 'g1', accountId: 'k1' }, 3600);
      await new StoreAdapter('Session', store, at).upsert('s-1', { uid: 'u1' }, 600);
      await new StoreAdapter('Interaction', store, at).upsert('i-1', {}, 600);
      await new StoreAdapter('Grant', store, at).upsert('g1', { accountId: 'k1', clientId: 'c1' }, 30 * 24 * 3600);
      await new StoreAdapter('Client', store, at).upsert('c1', { client_id: 'c1' });
      const ids = async () => (await store.collection(OAUTH_RECORDS).query()).map((r) => r.model).sort();

      expect(await sweepExpired(store, now)).toBe(0);
      now += 601_000; // code, session and interaction are past their expiry; the token and grant live
      expect(await sweepExpired(store, now, 2)).toBe(2); // bounded: two of the three
      expect(await sweepExpired(store, now, 2)).toBe(1);
      expect(await ids()).toStrictEqual(['AccessToken', 'Client', 'Grant']);
      // A session extended (written again with a new lifetime) is kept.
      await new StoreAdapter('Session', store, at).upsert('s-2', { uid: 'u2' }, 10);
      now += 3600_000;
      await new StoreAdapter('Session', store, at).upsert('s-2', { uid: 'u2' }, 600);
      expect(await sweepExpired(store, now)).toBe(1); // the token only
      expect(await ids()).toStrictEqual(['Client', 'Grant', 'Session']);
      expect(await store.collection(OAUTH_RECORDS).get(storedId('Client', 'c1'))).toMatchObject({ expiresAt: null });
      now += 31 * 24 * 3600_000;
      expect(await sweepExpired(store, now)).toBe(2);
      expect(await ids()).toStrictEqual(['Client']);
    });
  });
}
