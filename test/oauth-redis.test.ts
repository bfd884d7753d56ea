import { afterAll, beforeAll, expect, it } from 'vitest';
import { OAUTH_RECORDS } from '../src/auth/oauth/adapter.js';
import { listenOAuthApp, type OAuthApp } from './oauth-app.js';
import { codeFlow, tokenRequest } from './oauth-signin.js';
import { describeRedis, startRedis, type TestRedis } from './redis.js';

let redis: TestRedis | undefined;
afterAll(async () => {
  await redis?.stop();
});

describeRedis('sign-in on Redis: every instance accepts the tokens (issue 30)', () => {
  let a: OAuthApp;
  let b: OAuthApp;
  beforeAll(async () => {
    redis = await startRedis();
    const prefix = redis.prefix();
    a = await listenOAuthApp({ REDIS_URL: redis.url, REDIS_PREFIX: prefix });
    // Behind one public address: the second instance has the first one's issuer and resource.
    b = await listenOAuthApp({ REDIS_URL: redis.url, REDIS_PREFIX: prefix, PUBLIC_BASE_URL: a.url });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('a token issued by one instance works on the other; refresh rotates there; the store holds only hashes', async () => {
    const r = await fetch(`${a.url}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'redis@example.com' }) });
    const { access, refresh, clientId } = await codeFlow(a.url, ((await r.json()) as { api_key: string }).api_key);
    const onB = await fetch(`${b.url}/api/auth/info`, { headers: { authorization: `Bearer ${access}` } });
    expect(onB.status).toBe(200);
    expect(((await onB.json()) as { email: string }).email).toBe('redis@example.com');
    const rotated = await tokenRequest(b.url, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId });
    expect(rotated.status).toBe(200);
    const replay = await tokenRequest(a.url, { grant_type: 'refresh_token', refresh_token: refresh, client_id: clientId });
    expect(replay.json.error).toBe('invalid_grant');
    expect((await fetch(`${a.url}/api/auth/info`, { headers: { authorization: `Bearer ${String(rotated.json.access_token)}` } })).status).toBe(401);
    const all = JSON.stringify(await a.services.store.collection(OAUTH_RECORDS).query());
    expect(all).not.toContain(access);
    expect(all).not.toContain(refresh);
  }, 60_000);
});
