import { afterAll, beforeAll } from 'vitest';
import { createLogger } from '../src/log.js';
import { connectRedis, RedisStore } from '../src/state/redis/index.js';
import { startRedis, type TestRedis } from './redis.js';

const log = createLogger('silent');

/**
 * One redis-server for a describe block and stores on it with a chosen number of shards (the
 * layouts are the same on one server as on a Cluster), closed after the block.
 */
export function useLayoutStores(): { open: (prefix: string, shards: number) => Promise<RedisStore>; prefix: () => string; url: () => string } {
  let server: TestRedis | undefined;
  const stores: RedisStore[] = [];
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    for (const s of stores) await s.close().catch(() => {});
    await server?.stop();
  });
  return {
    open: async (prefix, shards) => {
      const s = new RedisStore(await connectRedis({ url: server!.url, log, quiet: true }), prefix, shards);
      stores.push(s);
      return s;
    },
    prefix: () => server!.prefix(),
    url: () => server!.url,
  };
}
