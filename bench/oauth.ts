// Sign-in benchmark (issue 30): an MCP tools/call with an OAuth access token against the same
// call with the API key itself, on one built server, rounds alternating, medians compared.
// Standalone: `node --import tsx bench/oauth.ts`. BENCH_SECONDS (per load run, default 6), BENCH_ROUNDS (default 3).
import { createHash, randomBytes } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { freePort, load, median, startService } from './lib.js';

const seconds = () => Number(process.env.BENCH_SECONDS ?? 6);
const rounds = () => Number(process.env.BENCH_ROUNDS ?? 3);
const REDIRECT = 'http://127.0.0.1:9/callback';

/** A browser's cookies across the redirects of one sign-in. */
async function step(url: string, cookies: Map<string, string>, form?: Record<string, string>): Promise<Response> {
  const cookie = [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, {
    method: form ? 'POST' : 'GET',
    redirect: 'manual',
    headers: { ...(cookie ? { cookie } : {}), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
    ...(form ? { body: new URLSearchParams(form).toString() } : {}),
  });
  for (const c of res.headers.getSetCookie()) {
    const pair = c.split(';')[0]!;
    cookies.set(pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1));
  }
  return res;
}

/** A key, and an access token for it through the whole code flow (DCR, PKCE, the sign-in form). */
async function keyAndToken(base: string): Promise<{ key: string; token: string }> {
  const post = (path: string, body: unknown) => fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json() as Promise<Record<string, string>>);
  const key = (await post('/api/auth/register', { email: 'bench@example.com' })).api_key!;
  const clientId = (await post('/oauth/register', { client_name: 'bench', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' })).client_id!;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const q = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', scope: 'mcp', resource: `${base}/mcp` });
  const cookies = new Map<string, string>();
  const page = new URL((await step(`${base}/oauth/authorize?${q}`, cookies)).headers.get('location')!, base).toString();
  const csrf = /name="csrf" value="([^"]+)"/.exec(await (await step(page, cookies)).text())![1]!;
  const resume = new URL((await step(page, cookies, { csrf, api_key: key, action: 'approve' })).headers.get('location')!, base).toString();
  const code = new URL((await step(resume, cookies)).headers.get('location')!).searchParams.get('code')!;
  const t = await fetch(`${base}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: clientId }).toString(),
  }).then((r) => r.json() as Promise<Record<string, string>>);
  return { key, token: t.access_token! };
}

export async function benchOAuth(): Promise<Record<string, unknown>> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = await startService(port, { PUBLIC_BASE_URL: base });
  try {
    const { key, token } = await keyAndToken(base);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'base_convert', arguments: { value: '255' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } } } });
    const call = (name: string, bearer: string) =>
      load(name, { url: `${base}/mcp`, method: 'POST', body, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'base_convert', authorization: `Bearer ${bearer}` }, duration: seconds() });
    await call('warm-up', token);
    const keyRps: number[] = [];
    const tokenRps: number[] = [];
    let failed = 0; // a refused call would measure the error path: reported, not hidden
    for (let i = 0; i < rounds(); i++) {
      const a = await call('key', key);
      const b = await call('token', token);
      keyRps.push(a.rps);
      tokenRps.push(b.rps);
      failed += a.non2xx + a.errors + b.non2xx + b.errors;
    }
    const k = median(keyRps);
    const t = median(tokenRps);
    return { key_rps: k, token_rps: t, token_vs_key: Math.round((t / k) * 1000) / 1000, rounds: rounds(), failed };
  } finally {
    child.kill('SIGTERM');
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) console.log(JSON.stringify(await benchOAuth(), null, 2));
