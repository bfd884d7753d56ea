/**
 * Wake-up signals between instances (Redis pub/sub on `P signal:<topic>`), e.g. "a webhook is
 * owed now" or "an attempt was claimed until T" for the cron schedulers. Best effort: a lost
 * signal only delays work until the next periodic check. The subscriber connection is made on
 * the first subscribe and reconnects by itself.
 */
import { randomBytes } from 'node:crypto';
import type { StoreSignals } from '../types.js';
import type { RedisConnection } from './connection.js';
import { duplicateForSubscriber, type RedisClient } from './clients.js';

export class RedisSignals implements StoreSignals {
  readonly #me = randomBytes(6).toString('hex');
  readonly #handlers = new Map<string, Set<() => void>>();
  #sub: RedisClient | null = null;
  #closed = false;

  constructor(
    readonly conn: RedisConnection,
    readonly prefix: string,
  ) {}

  #channel(topic: string): string {
    return `${this.prefix}signal:${topic}`;
  }

  publish(topic: string): void {
    if (this.#closed || this.conn.redis.status !== 'ready') return;
    this.conn.redis.publish(this.#channel(topic), this.#me).catch(() => {});
  }

  subscribe(topic: string, fn: () => void): () => void {
    if (this.#closed) return () => {};
    const channel = this.#channel(topic);
    let set = this.#handlers.get(channel);
    if (!set) {
      this.#handlers.set(channel, (set = new Set()));
      this.#subscriber()
        .subscribe(channel)
        .catch(() => {});
    }
    set.add(fn);
    return () => {
      set.delete(fn);
    };
  }

  #subscriber(): RedisClient {
    if (!this.#sub) {
      // Subscriptions wait in the offline queue while connecting, and are renewed on reconnect.
      const sub = duplicateForSubscriber(this.conn.redis);
      sub.on('error', () => {});
      sub.on('message', (channel: string, sender: string) => {
        if (sender === this.#me) return;
        for (const fn of this.#handlers.get(channel) ?? []) {
          try {
            fn();
          } catch {
            // a handler's failure is its own
          }
        }
      });
      this.#sub = sub;
    }
    return this.#sub;
  }

  close(): void {
    this.#closed = true;
    this.#sub?.disconnect();
    this.#sub = null;
  }
}
