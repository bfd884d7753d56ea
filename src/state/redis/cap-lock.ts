/**
 * The lock that keeps a capped insert exact on a sharded collection (Redis Cluster; see
 * RedisCollection.#insertCappedSharded): a `SET NX PX` in the cap range's own slot, with two
 * guards against the ways a Redis lock gets two holders (docs/scale-out.md, "Caps stay exact"):
 *
 * - **A failover that loses it.** When the lock's master has replicas (its own `CLUSTER NODES`
 *   names any not marked failed), the lock counts as taken only once a replica holds it
 *   (`WAIT 1`); else it is freed and the insert answers UNAVAILABLE. WAIT counts the writes of the connection
 *   it runs on and blocks that connection meanwhile, so the lock is set and waited for on a
 *   connection of its own, never the main, auto-pipelined one.
 * - **A holder slower than the lifetime** (a stalled process, a count waiting on a failing
 *   master): before inserting, the holder checks that the lock still holds its token with a
 *   quarter of the lifetime left (`stillOurs`), else it starts over.
 */
import { Cluster } from 'ioredis';
import { StoreError } from '../types.js';
import { connectWithin } from './clients.js';
import { isUnavailable, type RedisClient, type RedisConnection } from './connection.js';
import { isSlotMoving } from './shards.js';
import { keySlot } from './slot.js';

export interface CapLockOptions {
  /** The lock's lifetime (ms): the longest a crashed holder blocks its range. */
  ttlMs: number;
  /** The longest wait for a lock another holder has (ms), then UNAVAILABLE. */
  waitMs: number;
  /** The longest wait for a replica to hold a lock just taken (ms; REDIS_WAIT_TIMEOUT_MS). */
  replicaWaitMs: number;
}

/** KEYS: the lock. ARGV: a token. The lock's time left (ms) if the token holds it, else -3. */
const LEFT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PTTL', KEYS[1]) end
return -3
`;
/** KEYS: the lock. ARGV: a token. Frees the lock only if the token still holds it. */
const FREE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How long a master's replica count is trusted (ms): a replica added or failed is seen within it. */
const REPLICAS_TTL_MS = 5000;

/** The capped inserts' locks of one store, on a connection of their own (opened at first use). */
export class CapLocks {
  #client: Promise<RedisClient> | undefined;
  #closed = false;
  /** Replicas not marked failed, per master address, and when that was read. */
  readonly #replicas = new Map<string, { n: number; at: number }>();

  constructor(
    readonly conn: RedisConnection,
    readonly options: CapLockOptions,
  ) {}

  /**
   * Takes `lock` for `token`: waits while another holder has it (at most `waitMs`), and when the
   * lock's master has replicas, until one of them holds it. StoreError UNAVAILABLE otherwise.
   */
  async take(lock: string, token: string): Promise<void> {
    const { ttlMs, waitMs, replicaWaitMs } = this.options;
    const deadline = Date.now() + waitMs;
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      let got: 'OK' | null;
      let replicas: number | undefined;
      try {
        [got, replicas] = await this.#run('lock', async (c) => {
          if (!(await this.#hasReplicas(c, lock))) return [await c.set(lock, token, 'PX', ttlMs, 'NX'), undefined] as const;
          // One round trip; when the SET finds the lock taken, the WAIT has nothing new to wait for.
          const res = (await c.pipeline().set(lock, token, 'PX', ttlMs, 'NX').wait(1, replicaWaitMs).exec()) ?? [];
          for (const [err] of res) if (err) throw err;
          return [res[0]![1] as 'OK' | null, res[1]![1] as number] as const;
        });
      } catch (err) {
        // A slot moving or its master failing over: try again while there is time.
        if (!(err instanceof StoreError && err.code === 'UNAVAILABLE' && isSlotMoving(err)) || Date.now() >= deadline) throw err;
        await sleep(Math.min(wait * 10, 200));
        continue;
      }
      if (got === 'OK') {
        if (replicas === undefined || replicas >= 1) return;
        await this.release(lock, token);
        throw new StoreError('UNAVAILABLE', `the cap's lock was not confirmed by a Redis replica within ${replicaWaitMs} ms (a failover could lose it); retry`);
      }
      if (Date.now() >= deadline) throw new StoreError('UNAVAILABLE', "the cap's lock stayed taken; retry");
      await sleep(wait);
    }
  }

  /** Whether `token` still holds `lock` with at least a quarter of its lifetime left. */
  async stillOurs(lock: string, token: string): Promise<boolean> {
    const left = (await this.#run('lock check', (c) => c.eval(LEFT, 1, lock, token))) as number;
    return left >= this.options.ttlMs / 4;
  }

  /** Frees `lock` if `token` still holds it; a failure leaves it to expire. */
  async release(lock: string, token: string): Promise<void> {
    await this.#run('unlock', (c) => c.eval(FREE, 1, lock, token)).catch(() => {});
  }

  async close(): Promise<void> {
    this.#closed = true;
    const c = this.#client;
    this.#client = undefined;
    if (c) (await c.catch(() => undefined))?.disconnect();
  }

  async #run<T>(what: string, fn: (c: RedisClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreError('CLOSED', 'The store is closed');
    const c = await (this.#client ??= this.#open());
    try {
      return await fn(c);
    } catch (err) {
      if (err instanceof StoreError) throw err;
      if (isUnavailable(err) || isSlotMoving(err)) throw new StoreError('UNAVAILABLE', `Redis ${what} failed: ${(err as Error).message}`, { cause: err });
      throw err;
    }
  }

  async #open(): Promise<RedisClient> {
    const main = this.conn.redis;
    // WAIT may block up to its timeout: the command timeout must not cut it first.
    const commandTimeout = this.options.replicaWaitMs + this.conn.commandTimeoutMs;
    const override = { enableAutoPipelining: false, lazyConnect: true };
    const c = main instanceof Cluster ? main.duplicate(undefined, { ...override, redisOptions: { ...main.options.redisOptions, commandTimeout } }) : main.duplicate({ ...override, commandTimeout });
    c.on('error', () => {});
    try {
      // Bounded: a connect begun while the cluster reports itself failed never settled, and
      // every capped insert and the store's close waited on it (session 24's review).
      await connectWithin(c, Math.max(this.conn.commandTimeoutMs, 2000));
      return c;
    } catch (err) {
      this.#client = undefined;
      throw new StoreError('UNAVAILABLE', `cannot open the Redis connection of the caps' locks: ${(err as Error).message}`, { cause: err });
    }
  }

  /**
   * Whether the master of `key`'s slot has replicas (a single server: no). Not from the slot
   * table: CLUSTER SLOTS leaves out a replica that has not copied anything yet (offset 0), which
   * could still be promoted. The master's own CLUSTER NODES names every replica it has.
   */
  async #hasReplicas(c: RedisClient, key: string): Promise<boolean> {
    if (!(c instanceof Cluster)) return false;
    const addr = c.slots[keySlot(key)]?.[0];
    const node = addr === undefined ? undefined : c.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === addr);
    // Not known yet (a slot table being refreshed): wait for a replica, the safe side.
    if (!addr || !node) return true;
    const known = this.#replicas.get(addr);
    if (known && Date.now() - known.at < REPLICAS_TTL_MS) return known.n > 0;
    const n = replicasIn(String(await node.cluster('NODES')));
    this.#replicas.set(addr, { n, at: Date.now() });
    return n > 0;
  }
}

/** The replicas of the node that wrote `nodes` (its CLUSTER NODES: the line flagged myself), not marked failed. */
export function replicasIn(nodes: string): number {
  const lines = nodes.split('\n').map((l) => l.trim().split(' '));
  const me = lines.find((f) => f[2]?.split(',').includes('myself'))?.[0];
  return lines.filter((f) => f[3] === me && f[2]!.split(',').includes('slave') && !f[2]!.split(',').includes('fail')).length;
}
