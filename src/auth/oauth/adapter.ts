import { createHash } from 'node:crypto';
import { defineCollection, REMOVE, type Store } from '../../state/index.js';

/**
 * One artefact of the authorization server (a client, grant, code, token, session, interaction…)
 * as stored. `id` is the SHA-256 of model and artefact id: a stored token cannot be presented
 * (the raw token value, oidc-provider's `jti`, is never written; `find` puts it back from the id
 * it was asked for).
 */
export interface OAuthRecord {
  id: string;
  model: string;
  payload: Record<string, unknown>;
  /** The grant an artefact belongs to (revoking a grant deletes them all). */
  grantId: string | null;
  /** A session's uid (oidc-provider looks sessions up by it). */
  uid: string | null;
  /** The API key id a grant or token acts for (`keys list`, `keys revoke-grants`). */
  accountId: string | null;
  /** Epoch ms after which the record is dead (null = never). */
  expiresAt: number | null;
}

export const OAUTH_RECORDS = defineCollection<OAuthRecord>({ name: 'oauth_records', key: 'id', indexes: ['grantId', 'uid', 'accountId', 'expiresAt'] });

/** The stored id of an artefact: its id never appears in the store as such. */
export function storedId(model: string, id: string): string {
  return createHash('sha256').update(`${model}\0${id}`, 'utf8').digest('hex');
}

/** Artefacts oidc-provider ties to a grant (its memory adapter's list). */
const GRANTABLE = new Set(['AccessToken', 'AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

/** Artefacts whose id is a bearer secret (tokens, codes): stored only as the hash. */
const SECRET_IDS = new Set([...GRANTABLE, 'ClientCredentials', 'InitialAccessToken', 'RegistrationAccessToken']);

type Payload = Record<string, unknown> & { jti?: string; grantId?: string; uid?: string; accountId?: string; consumed?: number };

/**
 * oidc-provider's Adapter over our Store (file store and Redis alike, so every instance sees the
 * same tokens and a restart keeps them). Expired records read as absent and are deleted when
 * met; `sweep` removes the rest.
 */
/** What a sign-in must not lose to a Redis failover (REDIS_WAIT_REPLICAS): the grant, its refresh tokens, registered clients. */
const REPLICATED = new Set(['Grant', 'RefreshToken', 'Client']);

export class StoreAdapter {
  constructor(
    readonly model: string,
    readonly store: Store,
    readonly now: () => number,
  ) {}

  get #coll() {
    return this.store.collection(OAUTH_RECORDS);
  }

  async upsert(id: string, payload: Payload, expiresIn?: number): Promise<void> {
    // A token's or code's id is its value: kept only as the hash in `id`. Other models keep theirs.
    const { jti: _jti, ...rest } = payload;
    const stored = SECRET_IDS.has(this.model) ? rest : this.model === 'Client' ? withHashedSecret(payload) : payload;
    const grantId = typeof payload.grantId === 'string' ? payload.grantId : this.model === 'Grant' ? id : null;
    await this.#coll.put({
      id: storedId(this.model, id),
      model: this.model,
      payload: stored,
      grantId: GRANTABLE.has(this.model) || this.model === 'Grant' ? grantId : null,
      uid: typeof payload.uid === 'string' ? payload.uid : null,
      accountId: typeof payload.accountId === 'string' ? payload.accountId : null,
      expiresAt: typeof expiresIn === 'number' ? this.now() + expiresIn * 1000 : null,
    }, REPLICATED.has(this.model) ? { durability: 'replicated' } : undefined);
  }

  async #read(sid: string): Promise<Payload | undefined> {
    const rec = await this.#coll.get(sid);
    if (!rec || rec.model !== this.model) return undefined;
    if (rec.expiresAt !== null && rec.expiresAt <= this.now()) {
      await this.#coll.delete(sid);
      return undefined;
    }
    return rec.payload;
  }

  async find(id: string): Promise<Payload | undefined> {
    const p = await this.#read(storedId(this.model, id));
    // Opaque tokens carry their value as jti: put back from the id they were looked up by.
    if (p && SECRET_IDS.has(this.model)) p.jti = id;
    return p;
  }

  async findByUid(uid: string): Promise<Payload | undefined> {
    const [rec] = await this.#coll.query({ index: 'uid', eq: uid, where: { model: this.model }, limit: 1 });
    return rec ? this.#read(rec.id) : undefined;
  }

  async findByUserCode(): Promise<undefined> {
    return undefined; // the device flow is off
  }

  async consume(id: string): Promise<void> {
    const consumed = Math.floor(this.now() / 1000);
    await this.#coll.update(storedId(this.model, id), (r) => (r ? { ...r, payload: { ...r.payload, consumed } } : undefined));
  }

  async destroy(id: string): Promise<void> {
    await this.#coll.delete(storedId(this.model, id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await revokeGrant(this.store, grantId, this.model);
  }
}

/** How many expired records one sweep deletes at most (the next sweep takes the rest). */
export const SWEEP_BATCH = 500;

/**
 * Deletes expired artefacts (codes, sessions, interactions, grants, tokens past their expiry),
 * at most `batch` per call, so they do not pile up in the store: a record read after expiry is
 * deleted then, but most are never read again. A record written again since the query (a
 * session extended) is left alone. Resolves with how many were deleted.
 */
export async function sweepExpired(store: Store, now: number, batch = SWEEP_BATCH): Promise<number> {
  const coll = store.collection(OAUTH_RECORDS);
  // gte 0: records that never expire (null) sort before every number in the index.
  const dead = await coll.query({ index: 'expiresAt', gte: 0, lte: now, limit: batch });
  let deleted = 0;
  for (const r of dead) {
    await coll.update(r.id, (cur) => {
      if (cur === undefined || cur.expiresAt === null || cur.expiresAt > now) return undefined;
      deleted++;
      return REMOVE;
    });
  }
  return deleted;
}

/** Marks a stored client secret as its hash (a secret stored before hashing has no mark). */
export const SECRET_HASH_PREFIX = 'sha256$';

/** The stored form of a client secret: its SHA-256 (the secret is 32 random bytes: no salt or stretching needed). */
export function hashClientSecret(secret: string): string {
  return SECRET_HASH_PREFIX + createHash('sha256').update(secret, 'utf8').digest('base64url');
}

/**
 * A registered client's payload with its secret replaced by the hash: the clear secret is
 * returned once, in the registration response, and never written (provider.ts compares a
 * presented secret by its hash).
 */
function withHashedSecret(payload: Payload): Payload {
  const secret = payload.client_secret;
  if (typeof secret !== 'string' || secret.startsWith(SECRET_HASH_PREFIX)) return payload;
  return { ...payload, client_secret: hashClientSecret(secret) };
}

/** Deletes a grant's artefacts (of one model, or all of them and the grant itself). */
export async function revokeGrant(store: Store, grantId: string, model?: string): Promise<number> {
  const coll = store.collection(OAUTH_RECORDS);
  const recs = await coll.query(model ? { index: 'grantId', eq: grantId, where: { model } } : { index: 'grantId', eq: grantId });
  await Promise.all(recs.map((r) => coll.delete(r.id)));
  return recs.length;
}

/** The grants of one API key (`devtoolbox keys list`). */
export async function grantsOf(store: Store, keyId: string): Promise<Array<{ grantId: string; clientId: string; expiresAt: number | null }>> {
  const recs = await store.collection(OAUTH_RECORDS).query({ index: 'accountId', eq: keyId, where: { model: 'Grant' } });
  return recs.map((r) => ({ grantId: String(r.payload.jti ?? r.grantId ?? ''), clientId: String(r.payload.clientId ?? ''), expiresAt: r.expiresAt }));
}

/** Revokes every grant of an API key, with its tokens; resolves with how many grants there were. */
export async function revokeGrantsOf(store: Store, keyId: string): Promise<number> {
  const grants = await store.collection(OAUTH_RECORDS).query({ index: 'accountId', eq: keyId, where: { model: 'Grant' } });
  for (const g of grants) if (g.grantId) await revokeGrant(store, g.grantId);
  return grants.length;
}
