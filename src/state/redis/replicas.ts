/**
 * REDIS_WAIT_REPLICAS=n: a write made with `durability: 'replicated'` (a key issued, a link or a
 * cron task created, a sign-in grant) resolves only once n replicas have it. Redis's WAIT
 * counts the writes of the connection that sends it, and blocks that connection meanwhile, so
 * it runs on a connection of its own (never the main, auto-pipelined one) after a "fence" write
 * there: the replication stream is ordered, so a replica that has the fence has every write
 * acknowledged before it. Concurrent requests share one fence + WAIT (group commit). On a
 * Cluster the fence and WAIT go to every master (a fence key in a slot each one owns), so the
 * store's key layout does not matter here.
 */
import { Cluster, type Redis } from 'ioredis';
import { StoreError, type Collection, type CollectionDef, type WriteOptions } from '../types.js';
import { connectWithin, type RedisClient } from './clients.js';
import { keySlot } from './slot.js';

export interface ReplicaAckOptions {
  /** Replicas that must have a write (REDIS_WAIT_REPLICAS). */
  replicas: number;
  /** Longest WAIT (ms); fewer replicas by then → StoreError UNAVAILABLE. */
  timeoutMs: number;
  /** Key prefix of the fence keys. */
  prefix: string;
}

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** The fence + WAIT connection of one process. */
export class ReplicaAcks {
  readonly #client: RedisClient;
  #queue: Waiter[] = [];
  #running = false;
  #closed = false;
  /** How long the connect at start-up may take (as the main connection's, at least 5 s). */
  readonly #connectMs: number;

  constructor(
    main: RedisClient,
    readonly options: ReplicaAckOptions,
    commandTimeoutMs: number,
  ) {
    // WAIT may block up to its timeout: the command timeout must not cut it first.
    const timeout = options.timeoutMs + commandTimeoutMs;
    this.#connectMs = Math.max(commandTimeoutMs, 5000);
    const override = { enableAutoPipelining: false, lazyConnect: true };
    this.#client =
      main instanceof Cluster
        ? main.duplicate(undefined, { ...override, redisOptions: { ...main.options.redisOptions, commandTimeout: timeout } })
        : main.duplicate({ ...override, commandTimeout: timeout });
    this.#client.on('error', () => {});
  }

  /** Connects (at start-up, beside the main connection); StoreError UNAVAILABLE when it cannot. */
  async connect(): Promise<void> {
    try {
      await connectWithin(this.#client, this.#connectMs);
    } catch (err) {
      throw new StoreError('UNAVAILABLE', `cannot open the Redis replica acknowledgement connection (REDIS_WAIT_REPLICAS): ${(err as Error).message}`, { cause: err });
    }
  }

  /** Resolves once `replicas` replicas have every write this process had acknowledged before the call. */
  ack(): Promise<void> {
    if (this.#closed) return Promise.reject(new StoreError('CLOSED', 'The store is closed'));
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ resolve, reject });
      if (!this.#running) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue.splice(0);
        try {
          await this.#fence();
          for (const w of batch) w.resolve();
        } catch (err) {
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.#running = false;
    }
  }

  /** One fence write and WAIT on each primary, in parallel. */
  async #fence(): Promise<void> {
    const { replicas, timeoutMs } = this.options;
    const targets = this.#targets();
    if (targets.length === 0) throw new StoreError('UNAVAILABLE', 'Redis replica acknowledgement failed: no primary known');
    await Promise.all(
      targets.map(async ({ node, key }) => {
        let got: number;
        try {
          await node.incr(key);
          got = await node.wait(replicas, timeoutMs);
        } catch (err) {
          throw new StoreError('UNAVAILABLE', `Redis replica acknowledgement failed: ${(err as Error).message}`, { cause: err });
        }
        if (got < replicas) {
          throw new StoreError('UNAVAILABLE', `only ${got} of ${replicas} Redis replicas (REDIS_WAIT_REPLICAS) acknowledged the write within ${timeoutMs} ms`);
        }
      }),
    );
  }

  /** The primaries with a fence key each owns. */
  #targets(): Array<{ node: Redis; key: string }> {
    const c = this.#client;
    const base = `${this.options.prefix}ack`;
    if (!(c instanceof Cluster)) return [{ node: c, key: base }];
    const out: Array<{ node: Redis; key: string }> = [];
    for (const node of c.nodes('master')) {
      const name = `${node.options.host}:${node.options.port}`;
      const key = fenceKeyFor(base, (slot) => c.slots[slot]?.[0] === name);
      if (key) out.push({ node, key });
    }
    return out;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#client.disconnect();
  }
}

/** A key `<base>{<n>}` whose slot `owns` accepts; null if none among the first tags (a master without slots). */
function fenceKeyFor(base: string, owns: (slot: number) => boolean): string | null {
  for (let n = 0; n < 20_000; n++) if (owns(keySlot(String(n)))) return `${base}{${n}}`;
  return null;
}

/**
 * A write made on the primary that fewer than REDIS_WAIT_REPLICAS replicas confirmed in time
 * (or whose confirmation could not be asked for). Still UNAVAILABLE (503 with Retry-After), but
 * the usual "nothing was changed" would be false: the record is on the primary and survives
 * unless that primary fails before a replica copies it. `publicMessage` and `publicDetails`
 * are what the caller is told (src/errors.ts); `message` stays the operator's log line.
 */
export class UnconfirmedWriteError extends StoreError {
  readonly publicMessage: string;
  readonly publicDetails: { writtenOnPrimary: true; replicasRequired: number; waitTimeoutMs: number };

  constructor(cause: StoreError, replicas: number, timeoutMs: number) {
    super('UNAVAILABLE', cause.message, { cause });
    this.publicMessage =
      `Written on the Redis primary but not confirmed by ${replicas} replica${replicas === 1 ? '' : 's'} within ${timeoutMs} ms; ` +
      'it may or may not survive a failover. Retrying is safe for idempotent calls (e.g. url_shorten with the same externalId); otherwise check whether it exists before retrying.';
    this.publicDetails = { writtenOnPrimary: true, replicasRequired: replicas, waitTimeoutMs: timeoutMs };
  }
}

const WRITES = ['put', 'insert', 'insertCapped', 'delete', 'update', 'compareAndSet', 'increment'] as const;

/** The write's options: the last argument of each write method. */
function optionsOf(method: string, args: unknown[]): WriteOptions | undefined {
  const i = method === 'put' || method === 'insert' ? 1 : method === 'delete' ? 1 : method === 'insertCapped' || method === 'update' ? 2 : method === 'compareAndSet' || method === 'increment' ? 3 : -1;
  const o = args[i];
  return o && typeof o === 'object' ? (o as WriteOptions) : undefined;
}

/** `coll` whose `replicated` writes also wait for the replicas (ReplicaAcks.ack) before resolving. */
export function replicatedCollection<T extends object>(coll: Collection<T>, acks: ReplicaAcks): Collection<T> {
  const writes = new Set<string>(WRITES);
  // A Proxy, not a prototype: the collection's methods use private fields, so `this` stays the collection.
  return new Proxy(coll, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const fn = (v as (...a: unknown[]) => unknown).bind(target);
      if (typeof prop !== 'string' || !writes.has(prop)) return fn;
      return async (...args: unknown[]) => {
        const out = await fn(...args);
        // Nothing was written when an insert found the id taken or the cap full.
        const wrote = out !== false && out !== 'taken' && out !== 'full';
        if (wrote && optionsOf(prop, args)?.durability === 'replicated') {
          try {
            await acks.ack();
          } catch (err) {
            // The write itself succeeded: say so (a closed store is not a replica failure).
            if (err instanceof StoreError && err.code === 'UNAVAILABLE') throw new UnconfirmedWriteError(err, acks.options.replicas, acks.options.timeoutMs);
            throw err;
          }
        }
        return out;
      };
    },
  });
}

/**
 * `store` whose collections' `replicated` writes wait for the replicas; closing it closes the
 * acknowledgement connection too. Everything else is the store itself.
 */
export function withReplicaAcks<S extends { collection<T extends object>(def: CollectionDef<T>): Collection<T>; close(): Promise<void> }>(store: S, acks: ReplicaAcks): S {
  const wrapped = new WeakMap<object, object>();
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'collection') {
        return <T extends object>(def: CollectionDef<T>): Collection<T> => {
          const coll = target.collection(def);
          let w = wrapped.get(coll);
          if (!w) wrapped.set(coll, (w = replicatedCollection(coll, acks)));
          return w as Collection<T>;
        };
      }
      if (prop === 'close') return async () => Promise.all([target.close(), acks.close()]).then(() => {});
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}
