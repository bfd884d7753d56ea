/**
 * Key records kept across calls (issue 37), used only while their generation is current: on a
 * shared backend the limit script compares it with the key's generation in Redis
 * (`P{rl:key:<id>}:gen`); on an embedded store Auth compares it with the store's one generation.
 * Every writer of a key record bumps the generation after its write (keysChanged in ./keys.ts),
 * and every reader here reads the generation BEFORE the record it keeps: a cached pair can be
 * older than its generation, never newer. See docs/scale-out.md "Session 11".
 */
import type { SharedWindows, Store } from '../state/index.js';
import { findApiKeyByHash, hashApiKey, KEY_PATTERN, type ApiKeyRecord } from './keys.js';
import { ownerKey } from './owner.js';

/** A key record and the generation it was read under. */
export interface CachedKey {
  hash: string;
  rec: ApiKeyRecord;
  /** undefined: not confirmed by a generation (checked without one, as if uncached; never kept). */
  gen: string | undefined;
}

/** Most key records cached (oldest out): only keys found in the store are cached. */
export const KEY_CACHE_MAX = 10_000;

/** Reads of a record that moved to another key id during a fill before it is left unconfirmed. */
const FILL_TRIES = 3;

/** The key records of one Auth (one instance), by key hash, bounded; see the module comment. */
export class KeyCache {
  /** Most records held, oldest out (a field so that a test can make it small). */
  max = KEY_CACHE_MAX;
  /** By key hash, in insertion order (oldest first). */
  readonly #entries = new Map<string, CachedKey>();
  /** Hashes of the keys presented in this turn of the event loop (dropped at its end). */
  readonly #hashes = new Map<string, string>();
  /** Fills under way, by key hash: the requests of a burst share one. */
  readonly #fills = new Map<string, Promise<CachedKey | undefined>>();

  constructor(readonly store: Store) {}

  get size(): number {
    return this.#entries.size;
  }

  /**
   * The SHA-256 of a presented key (what the cache and the store know it by), or undefined for
   * a malformed key (unknown without a hash). Computed once per key and turn: the requests of a
   * burst share it (a hash per call was ≈ 1 µs of a keyed call). Raw keys are kept no longer
   * than the turn, as the lookups shared per turn keep them.
   */
  hashOf(key: string): string | undefined {
    let hash = this.#hashes.get(key);
    if (hash === undefined) {
      if (!KEY_PATTERN.test(key)) return undefined;
      if (this.#hashes.size === 0) setImmediate(() => this.#hashes.clear());
      this.#hashes.set(key, (hash = hashApiKey(key)));
    }
    return hash;
  }

  /** The entry of a key, whatever its generation: the caller compares it (or the script does). */
  get(hash: string): CachedKey | undefined {
    return this.#entries.get(hash);
  }

  /** Keeps `c` (a record read after its generation `c.gen`) and returns it. */
  remember(c: CachedKey): CachedKey {
    if (c.gen === undefined) return c;
    this.#entries.delete(c.hash);
    if (this.#entries.size >= this.max) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(c.hash, c);
    return c;
  }

  /** Drops `c` if it is still the entry of its key. */
  forget(c: CachedKey): void {
    if (this.#entries.get(c.hash) === c) this.#entries.delete(c.hash);
  }

  /**
   * Reads a key's record for the cache on a shared backend: the record (for its key id), then
   * the key's generation, then the record again, which is the one kept (read after the
   * generation). Undefined for an unknown key (nothing kept). Concurrent fills of one key share
   * one.
   */
  fill(hash: string, windows: SharedWindows): Promise<CachedKey | undefined> {
    let fill = this.#fills.get(hash);
    if (fill === undefined) {
      fill = this.#read(hash, windows);
      this.#fills.set(hash, fill);
      const done = () => this.#fills.delete(hash);
      fill.then(done, done);
    }
    return fill;
  }

  async #read(hash: string, windows: SharedWindows): Promise<CachedKey | undefined> {
    let rec = await findApiKeyByHash(this.store, hash);
    for (let i = 0; rec !== undefined && i < FILL_TRIES; i++) {
      const keyId: string = rec.key_id;
      const gen = await windows.generation(ownerKey({ keyId, ip: '' }));
      rec = await findApiKeyByHash(this.store, hash);
      // The same key id: the record was read after this generation. Another (an import moved
      // the key in between): its own generation is read next.
      if (rec?.key_id === keyId) return this.remember({ hash, rec, gen });
    }
    return rec && { hash, rec, gen: undefined };
  }
}
