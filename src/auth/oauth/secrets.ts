import { randomBytes } from 'node:crypto';
import type { JWK } from 'jose';
import { defineCollection, type Store } from '../../state/index.js';

/** The authorization server's own secrets, shared by every instance through the store. */
export interface OAuthSecretRecord {
  id: string;
  /** Signs oidc-provider's cookies and our sign-in form's CSRF token. */
  cookie_key: string;
  /** The signing key oidc-provider requires (we issue no ID tokens; its JWKS is published). */
  jwk: JWK;
  created_at: string;
}

export const OAUTH_SECRETS = defineCollection<OAuthSecretRecord>({ name: 'oauth_secrets', key: 'id' });

const ID = 'server';

/**
 * The secrets, made on first use: the first instance to insert wins, the others read its record
 * (a restart keeps sessions and the published key).
 */
export async function oauthSecrets(store: Store, now: number): Promise<OAuthSecretRecord> {
  const coll = store.collection(OAUTH_SECRETS);
  const found = await coll.get(ID);
  if (found) return found;
  // jose only here: the manifest imports this module, and must stay light (issue 18).
  const { exportJWK, generateKeyPair } = await import('jose');
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'ES256', use: 'sig', kid: randomBytes(8).toString('hex') };
  const rec: OAuthSecretRecord = { id: ID, cookie_key: randomBytes(32).toString('base64url'), jwk, created_at: new Date(now).toISOString() };
  if (await coll.insert(rec)) return rec;
  const winner = await coll.get(ID);
  if (!winner) throw new Error('oauth secrets: inserted by another instance, then gone');
  return winner;
}
