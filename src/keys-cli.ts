import { API_KEYS, listApiKeys, normaliseEmail, setPlan } from './auth/keys.js';
import { grantsOf, revokeGrantsOf } from './auth/oauth/adapter.js';
import { isPlanName, PLAN_NAMES } from './auth/plans.js';
import type { Config } from './config.js';
import { ToolError } from './errors.js';
import { createLogger } from './log.js';
import { readServerRecord } from './http/server-record.js';
import { openStoreForCli, StoreError, type Store } from './state/index.js';
import { stdio, type CliIo } from './lib/cli-io.js';

const USAGE = `Usage:
  devtoolbox keys list                        list API keys (prefixes only; keys are stored hashed)
  devtoolbox keys set-plan <email> pro|free   change the plan of the key registered for <email>
  devtoolbox keys revoke-grants <email>       end every sign-in (OAuth grant) of that key, with its tokens

With the server stopped, these work on DATA_DIR directly. While a server runs, they go through
its admin route: set ADMIN_TOKEN (the server's) and, unless the server recorded its address in
DATA_DIR, DEVTOOLBOX_URL (e.g. http://127.0.0.1:3000).
`;

export type { CliIo };

/**
 * `devtoolbox keys …`: the operator's side of API keys, run against DATA_DIR with the server
 * stopped (the store's lock refuses while a server owns the dir). Returns the exit code.
 */
export async function keysCommand(args: string[], config: Config, io: CliIo = stdio, env: Record<string, string | undefined> = process.env): Promise<number> {
  const [sub, ...rest] = args;
  // With REDIS_URL the CLI works on Redis directly, servers running or not (plans are read per call).
  const server = config.redis ? undefined : env.DEVTOOLBOX_URL?.trim() || readServerRecord(config.dataDir)?.url;
  if (sub === 'list' && rest.length === 0) {
    if (server) return viaServer(server, env, io, 'GET', '/admin/keys');
    return withStore(config, io, (store) => list(store, io));
  }
  if (sub === 'set-plan' && rest.length === 2) {
    const [rawEmail = '', plan = ''] = rest;
    if (!isPlanName(plan)) {
      io.err(`devtoolbox keys: plan must be ${PLAN_NAMES.join(' or ')}, got "${plan}"\n\n${USAGE}`);
      return 2;
    }
    let email: string;
    try {
      email = normaliseEmail(rawEmail);
    } catch (err) {
      io.err(`devtoolbox keys: ${err instanceof ToolError ? err.message : String(err)}\n`);
      return 2;
    }
    if (server) return viaServer(server, env, io, 'POST', '/admin/keys/plan', { email, plan });
    return withStore(config, io, async (store) => {
      const rec = await setPlan(store, email, plan);
      if (!rec) {
        io.err(`devtoolbox keys: no API key is registered for ${email}\n`);
        return 1;
      }
      io.out(`${rec.email} (${rec.key_prefix}…) is now on the ${rec.plan} plan\n`);
      return 0;
    });
  }
  if (sub === 'revoke-grants' && rest.length === 1) {
    let email: string;
    try {
      email = normaliseEmail(rest[0]);
    } catch (err) {
      io.err(`devtoolbox keys: ${err instanceof ToolError ? err.message : String(err)}\n`);
      return 2;
    }
    if (server) return viaServer(server, env, io, 'POST', '/admin/keys/revoke-grants', { email });
    return withStore(config, io, async (store) => {
      const rec = await store.collection(API_KEYS).get(email);
      if (!rec) {
        io.err(`devtoolbox keys: no API key is registered for ${email}\n`);
        return 1;
      }
      const n = await revokeGrantsOf(store, rec.key_id);
      io.out(`${rec.email} (${rec.key_prefix}…): ${n} grant${n === 1 ? '' : 's'} revoked\n`);
      return 0;
    });
  }
  if (sub === '--help' || sub === '-h' || sub === 'help') {
    io.out(USAGE);
    return 0;
  }
  io.err(`devtoolbox keys: unknown or incomplete command "${args.join(' ')}"\n\n${USAGE}`);
  return 2;
}

/** The same commands through a running server's admin route (the change applies at once). */
async function viaServer(base: string, env: Record<string, string | undefined>, io: CliIo, method: 'GET' | 'POST', path: string, body?: unknown): Promise<number> {
  const token = env.ADMIN_TOKEN;
  if (!token) {
    io.err(`devtoolbox keys: a server is running (${base}); set ADMIN_TOKEN to the server's to change keys while it runs, or stop it first\n`);
    return 1;
  }
  let res: Response;
  try {
    res = await fetch(new URL(path, base), {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
  } catch (err) {
    io.err(`devtoolbox keys: cannot reach the server at ${base}: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
  if (res.status === 404) {
    io.err(`devtoolbox keys: the server at ${base} has no admin route (start it with ADMIN_TOKEN set)\n`);
    return 1;
  }
  const answer = (await res.json().catch(() => ({}))) as { keys?: ApiKeyRow[]; email?: string; key_prefix?: string; plan?: string; revoked?: number; error?: { message: string } };
  if (!res.ok) {
    io.err(`devtoolbox keys: ${answer.error?.message ?? `the server answered ${res.status}`}\n`);
    return 1;
  }
  if (answer.keys) return printKeys(answer.keys, io);
  if (answer.revoked !== undefined) {
    io.out(`${answer.email} (${answer.key_prefix}…): ${answer.revoked} grant${answer.revoked === 1 ? '' : 's'} revoked\n`);
    return 0;
  }
  io.out(`${answer.email} (${answer.key_prefix}…) is now on the ${answer.plan} plan\n`);
  return 0;
}

interface ApiKeyRow {
  key_prefix: string;
  plan: string;
  created_at: string;
  email: string;
  /** Sign-ins (OAuth grants) of the key: the client and until when. */
  grants?: ReadonlyArray<{ client_id: string; expires_at: string | null }>;
}

async function list(store: Store, io: CliIo): Promise<number> {
  const keys = await listApiKeys(store);
  const rows: ApiKeyRow[] = [];
  for (const k of keys) {
    const grants = (await grantsOf(store, k.key_id)).map((g) => ({ client_id: g.clientId, expires_at: g.expiresAt === null ? null : new Date(g.expiresAt).toISOString() }));
    rows.push({ key_prefix: k.key_prefix, plan: k.plan, created_at: k.created_at, email: k.email, ...(grants.length > 0 ? { grants } : {}) });
  }
  return printKeys(rows, io);
}

function printKeys(keys: readonly ApiKeyRow[], io: CliIo): number {
  if (keys.length === 0) {
    io.out('No API keys yet (POST /api/auth/register creates one).\n');
    return 0;
  }
  const rows = [['PREFIX', 'PLAN', 'CREATED', 'EMAIL'], ...keys.map((k) => [`${k.key_prefix}…`, k.plan, k.created_at, k.email])];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  rows.forEach((r, i) => {
    io.out(r.map((cell, j) => (j === r.length - 1 ? cell : cell.padEnd(widths[j]!))).join('  ') + '\n');
    // A key's sign-ins under it (none: the table reads as it always did).
    for (const g of i === 0 ? [] : (keys[i - 1]!.grants ?? [])) io.out(`  grant: client ${g.client_id}${g.expires_at ? ` until ${g.expires_at}` : ''}\n`);
  });
  return 0;
}

async function withStore(config: Config, io: CliIo, fn: (store: Store) => Promise<number>): Promise<number> {
  let store: Store;
  try {
    store = await openStoreForCli(config, { log: createLogger(config.logLevel === 'debug' ? 'debug' : 'warn'), purpose: 'keys' });
  } catch (err) {
    if (err instanceof StoreError && err.code === 'LOCKED') {
      io.err(`devtoolbox keys: DATA_DIR is in use (keys can only be changed with the server stopped): ${err.message}\nStop the server, run the command again, then start the server.\n`);
      return 1;
    }
    if (err instanceof StoreError) {
      io.err(`devtoolbox keys: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
