#!/usr/bin/env node
// The conformance suite's authorization-server scenarios against our built-in authorization
// server (issue 30), run by scripts/conformance.sh:
//   authorization-server-metadata-endpoint  RFC 8414 metadata (and client_id_metadata_document_supported);
//   authorization-code-grant                a whole code flow with PKCE and the resource parameter.
// The suite waits for a person to sign in at the URL it prints; here this script is that person:
// it registers an API key and a public client (DCR) with the suite's callback, reads the URL from
// the suite's output, submits our sign-in form with the key, and follows the redirects to the
// suite's callback. Prints one line per check; exit status 1 when a check failed.
//
//   node scripts/conformance-auth.mjs --base <server origin> --node22 <node 22> --suite <conformance dist/index.js> --out <dir>
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, v, i, all) => (i % 2 === 0 ? [...acc, [v.replace(/^--/, ''), all[i + 1]]] : acc), []));
const { base, node22, suite, out } = args;
if (!base || !node22 || !suite || !out) {
  console.error('conformance-auth: --base, --node22, --suite and --out are required');
  process.exit(2);
}
/** A port the system just handed out as free (a random one in 38000–38999 once met a connection's own port: EADDRINUSE). */
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}
const CALLBACK_PORT = Number(args.port ?? (await freePort()));
const REDIRECT = `http://127.0.0.1:${CALLBACK_PORT}/callback`;

async function json(res) {
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${res.url}: ${res.status} ${text.slice(0, 200)}`);
  }
}

/** A cookie jar for one sign-in on our origin. */
const jar = new Map();
async function browse(url, init = {}) {
  const cookie = [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
  const res = await fetch(url, { ...init, redirect: 'manual', headers: { ...(init.headers ?? {}), ...(cookie ? { cookie } : {}) } });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    if (/expires=Thu, 01 Jan 1970/i.test(c) || pair.slice(i + 1) === '') jar.delete(pair.slice(0, i));
    else jar.set(pair.slice(0, i), pair.slice(i + 1));
  }
  return res;
}
const next = (res, from) => {
  const to = res.headers.get('location');
  if (!to) throw new Error(`expected a redirect from ${from}, got ${res.status}`);
  return new URL(to, from).toString();
};

/** What the person does: opens the URL, pastes the key, approves, and is sent back to the client. */
async function signIn(authorizeUrl, apiKey) {
  const page = next(await browse(authorizeUrl), authorizeUrl);
  const html = await (await browse(page)).text();
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1];
  if (!csrf) throw new Error('the sign-in page has no CSRF field');
  const approved = await browse(page, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ csrf, api_key: apiKey, action: 'approve' }).toString() });
  const resume = next(approved, page);
  const back = next(await browse(resume), resume);
  if (!back.startsWith(REDIRECT)) throw new Error(`sent back to ${back}, not the suite's callback`);
  await fetch(back); // the suite's callback server takes it from here
}

/** Runs the suite's authorization scenarios (the code grant reads the metadata scenario's result); resolves with every check. */
function runSuite(extra, onLine) {
  return new Promise((resolve, reject) => {
    fs.mkdirSync(out, { recursive: true });
    const child = spawn(node22, [suite, 'authorization', '--url', base, '-o', out, ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const read = (chunk) => {
      const text = chunk.toString();
      log += text;
      for (const line of text.split('\n')) onLine(line.trim());
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('error', reject);
    child.on('close', () => {
      fs.writeFileSync(path.join(out, 'suite.log'), log);
      const found = fs.readdirSync(out, { recursive: true }).filter((f) => String(f).endsWith('checks.json'));
      if (found.length === 0) return reject(new Error(`no checks.json (suite log in ${out})`));
      resolve(found.flatMap((f) => JSON.parse(fs.readFileSync(path.join(out, String(f)), 'utf8')).map((c) => [path.dirname(String(f)), c])));
    });
  });
}

const email = `conformance-${Date.now()}@example.com`;
const { api_key: apiKey } = await json(await fetch(`${base}/api/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email }) }));
const { client_id: clientId } = await json(
  await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'MCP conformance suite', redirect_uris: [REDIRECT], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' }),
  }),
);

let signing;
const checks = await runSuite(['--client-id', clientId, '--resource', `${base}/mcp`, '--port', String(CALLBACK_PORT)], (line) => {
  if (!signing && line.startsWith(`${base}/oauth/authorize?`)) signing = signIn(line, apiKey).catch((err) => console.error(`conformance-auth: sign-in failed: ${err.message}`));
});
await signing;

let failed = 0;
for (const [dir, c] of checks) {
  if (c.status === 'FAILURE') failed++;
  console.log(`${c.status.padEnd(8)} ${dir.replace(/^authorization-server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '')} / ${c.id}${c.errorMessage ? ` — ${c.errorMessage}` : ''}`);
}
process.exit(failed > 0 ? 1 : 0);
