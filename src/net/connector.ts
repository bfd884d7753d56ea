/**
 * The undici Agent every fetch goes through. Its connector judges the address actually
 * connected to: literal IPs directly, host names through a `lookup` that checks every resolved
 * address and hands Node exactly those (no second resolution, so DNS rebinding has nothing to
 * exploit). Node's own fetch and `http.Agent` options are not used: they bypass this connector.
 */
import dns from 'node:dns';
import net from 'node:net';
import type { Agent, buildConnector } from 'undici';
import { BlockedAddressError } from './fetch-errors.js';

/** A resolved address, as `dns.lookup(host, {all: true})` gives it. */
export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address. Injectable so tests can stub DNS. */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const systemResolver: Resolver = async (hostname) => {
  const list = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return list.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

let loaded: Promise<typeof import('undici')> | undefined;

/** undici, imported by the first fetch: ≈ 0.1 s that start-up need not spend (issue 18). */
export function undici(): Promise<typeof import('undici')> {
  return (loaded ??= import('undici'));
}

export interface GuardedAgentOptions {
  /** True when the address may be connected to. */
  allowed: (address: string) => boolean;
  resolver: Resolver;
  connectTimeoutMs: number;
  /** Sockets per origin at most (the budget's per-host bound): requests past it wait for one. */
  connectionsPerOrigin: number;
}

/** An Agent that refuses, at connect time, every address `allowed` refuses. */
export async function createGuardedAgent({ allowed, resolver, connectTimeoutMs, connectionsPerOrigin }: GuardedAgentOptions): Promise<Agent> {
  const { Agent, buildConnector } = await undici();
  // Node calls `lookup` only for host names; every answer is checked.
  const lookup = (
    hostname: string,
    opts: { all?: boolean; family?: number },
    cb: (err: Error | null, address?: string | ResolvedAddress[], family?: number) => void,
  ): void => {
    resolver(hostname).then(
      (list) => {
        let addrs = list;
        if (opts.family === 4 || opts.family === 6) addrs = list.filter((a) => a.family === opts.family);
        if (addrs.length === 0) {
          cb(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }));
          return;
        }
        if (!addrs.every((a) => allowed(a.address))) {
          cb(new BlockedAddressError('blocked address'));
          return;
        }
        if (opts.all) cb(null, addrs);
        else cb(null, addrs[0]!.address, addrs[0]!.family);
      },
      (err: unknown) => cb(err instanceof Error ? err : new Error(String(err))),
    );
  };
  const baseConnect = buildConnector({ timeout: connectTimeoutMs, lookup } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (opts, cb) => {
    // Literal IPs never reach `lookup`: check them here, at connect time, on every hop.
    if (net.isIP(opts.hostname.replace(/^\[|\]$/g, '')) !== 0 && !allowed(opts.hostname)) {
      cb(new BlockedAddressError('blocked address'), null);
      return;
    }
    baseConnect(opts, cb);
  };
  return new Agent({ connect, connections: connectionsPerOrigin, keepAliveTimeout: 4_000, keepAliveMaxTimeout: 10_000, maxHeaderSize: 64 * 1024 });
}
