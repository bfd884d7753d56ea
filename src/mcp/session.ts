/**
 * Legacy (2025-11-25 and older) streamable HTTP sessions, only as far as MCP Apps needs one: the
 * `tools/list` of a client that declared `io.modelcontextprotocol/ui` in its `initialize` names
 * the views (`_meta.ui`), that of any other client does not. HTTP here is stateless, so the
 * declaration travels in the session id the server issues with that `initialize` answer
 * (`Mcp-Session-Id`, which the client then sends on every request): an opaque value signed with
 * a key kept in the store, so every instance on the same store (file or Redis) recognises
 * another's ids without shared session state, and a restart keeps them. A client that did not
 * declare the extension is issued no id and sees exactly what it saw before.
 *
 * An id we did not sign (forged, or signed with a key the store no longer has) is a session we
 * do not know: 404, as the transport spec asks of an expired session; the client starts a new
 * one with `initialize`.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { defineCollection, type Store } from '../state/index.js';

/** The signing key, one record shared by every instance (the first to insert wins). */
interface SessionKeyRecord {
  id: string;
  key: string;
  created_at: string;
}

const SESSION_KEYS = defineCollection<SessionKeyRecord>({ name: 'mcp_session_keys', key: 'id' });
const KEY_ID = 'ui';
/** Ids of this scheme start so (the version, should the scheme ever change). */
const PREFIX = 'ui1.';
const NONCE_BYTES = 16;
const TAG_BYTES = 16;
/** PREFIX + base64url(16 bytes) + "." + base64url(16 bytes). */
const ID_LENGTH = PREFIX.length + 22 + 1 + 22;

/** What a request's `Mcp-Session-Id` says: none sent, a session that declared MCP Apps, or an id we do not know. */
export type SessionState = 'none' | 'ui' | 'unknown';

/** The session id error (the SDK's own words and code for an unknown session). */
export const SESSION_NOT_FOUND = { code: -32001, message: 'Session not found' } as const;

/** Issues and checks session ids; the key is read from (or first written to) the store once. */
export class UiSessions {
  #key: Promise<Buffer> | undefined;
  /** The last ids checked: a client sends the same one on every request. */
  readonly #known = new Set<string>();

  constructor(
    readonly store: Store,
    readonly now: () => number,
  ) {}

  #signingKey(): Promise<Buffer> {
    return (this.#key ??= loadKey(this.store, this.now()).catch((err: unknown) => {
      this.#key = undefined; // a store that was down may be back on the next request
      throw err;
    }));
  }

  #tag(key: Buffer, nonce: string): string {
    return createHmac('sha256', key).update(`mcp-session\0${nonce}`).digest().subarray(0, TAG_BYTES).toString('base64url');
  }

  /** A new session id for a client that declared MCP Apps. */
  async issue(): Promise<string> {
    const nonce = randomBytes(NONCE_BYTES).toString('base64url');
    return `${PREFIX}${nonce}.${this.#tag(await this.#signingKey(), nonce)}`;
  }

  /** What the `Mcp-Session-Id` header (null: absent) says. */
  async check(id: string | null): Promise<SessionState> {
    if (id === null) return 'none';
    if (this.#known.has(id)) return 'ui';
    if (id.length !== ID_LENGTH || !id.startsWith(PREFIX)) return 'unknown';
    const nonce = id.slice(PREFIX.length, PREFIX.length + 22);
    const tag = Buffer.from(id.slice(PREFIX.length + 23));
    const expected = Buffer.from(this.#tag(await this.#signingKey(), nonce));
    if (tag.length !== expected.length || !timingSafeEqual(tag, expected)) return 'unknown';
    // Bounded: a client keeps its id for its whole session; a flood of valid ids only evicts.
    if (this.#known.size >= KNOWN_MAX) this.#known.clear();
    this.#known.add(id);
    return 'ui';
  }
}

const KNOWN_MAX = 10_000;

async function loadKey(store: Store, now: number): Promise<Buffer> {
  const coll = store.collection(SESSION_KEYS);
  const found = await coll.get(KEY_ID);
  if (found) return Buffer.from(found.key, 'base64url');
  const rec: SessionKeyRecord = { id: KEY_ID, key: randomBytes(32).toString('base64url'), created_at: new Date(now).toISOString() };
  if (await coll.insert(rec)) return Buffer.from(rec.key, 'base64url');
  const winner = await coll.get(KEY_ID);
  if (!winner) throw new Error('mcp session key: inserted by another instance, then gone');
  return Buffer.from(winner.key, 'base64url');
}
