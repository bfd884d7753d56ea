/**
 * REDIS_TLS (REDIS_SENTINEL_TLS) and its files, read and checked once at start-up: a missing or unreadable file, a
 * text that is not PEM, or a key that does not match its certificate is a configuration
 * error (exit 1) rather than a reconnect loop with an OpenSSL message later. Returns a message
 * instead of throwing (src/config.ts turns it into a ConfigError), like ./topology.ts.
 */
import fs from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import type { RedisTls } from './topology.js';

type Env = Record<string, string | undefined>;

/** The variables that configure TLS, besides the switch itself. */
const FILE_VARS = ['REDIS_TLS_CA_FILE', 'REDIS_TLS_CERT_FILE', 'REDIS_TLS_KEY_FILE'] as const;

function readPem(env: Env, name: (typeof FILE_VARS)[number]): string | { error: string } | undefined {
  const file = env[name]?.trim();
  if (!file) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    return { error: `${name}: cannot read "${file}" (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})` };
  }
  if (!/-----BEGIN [A-Z0-9 ]+-----/.test(text)) return { error: `${name}: "${file}" is not a PEM file (no -----BEGIN … ----- line)` };
  return text;
}

/** A parsed on/off switch; undefined when unset; a message when it is neither. */
function onOff(env: Env, name: string): boolean | undefined | { error: string } {
  const raw = env[name]?.trim().toLowerCase() ?? '';
  if (!['', 'on', 'off', 'true', 'false', '1', '0'].includes(raw)) return { error: `${name} must be on or off, got "${env[name]}"` };
  return raw === '' ? undefined : raw === 'on' || raw === 'true' || raw === '1';
}

/**
 * What speaks TLS in a Redis deployment: the data nodes (`data`: the one server, the primary
 * and replicas, every cluster node) and, under Sentinel, the sentinels (`sentinels`; by
 * default as the data nodes, REDIS_SENTINEL_TLS to differ: plain sentinels on a private
 * network in front of TLS data nodes, or the reverse). Both carry the same files and name. A
 * message when the settings are wrong. `urlTls`: whether REDIS_URL is rediss:// (false for
 * Sentinel, Cluster or none).
 */
export function readRedisTls(env: Env, deployment: 'url' | 'sentinel' | 'cluster' | null, urlTls: boolean): { data?: RedisTls; sentinels?: RedisTls } | string {
  const switched = onOff(env, 'REDIS_TLS');
  if (typeof switched === 'object') return switched.error;
  const sentinelSwitch = onOff(env, 'REDIS_SENTINEL_TLS');
  if (typeof sentinelSwitch === 'object') return sentinelSwitch.error;
  if (sentinelSwitch !== undefined && deployment !== 'sentinel') return 'REDIS_SENTINEL_TLS is for REDIS_SENTINELS (whether the sentinels speak TLS); for the data nodes use REDIS_TLS';
  const servername = env.REDIS_TLS_SERVERNAME?.trim() ?? '';
  const given = [...FILE_VARS.filter((v) => env[v]?.trim()), ...(servername ? ['REDIS_TLS_SERVERNAME'] : [])];
  let on: boolean;
  if (deployment === 'url') {
    if (switched === true && !urlTls) return 'REDIS_TLS=on with REDIS_URL: write the URL as rediss://host:port (TLS) instead';
    if (switched === false && urlTls) return 'REDIS_TLS=off contradicts REDIS_URL rediss:// (which means TLS): use redis:// for a plain connection';
    on = urlTls;
  } else on = switched === true;
  if (switched === true && !deployment) return 'REDIS_TLS needs a Redis deployment (REDIS_SENTINELS or REDIS_CLUSTER_NODES; with REDIS_URL write rediss://)';
  const sentinelsOn = deployment === 'sentinel' && (sentinelSwitch ?? on);
  if (!on && !sentinelsOn) {
    if (given.length === 0) return {};
    return `${given[0]} needs TLS: ${deployment === 'url' ? 'REDIS_URL rediss://host:port' : 'REDIS_TLS=on'}${deployment ? '' : ' and a Redis deployment'}`;
  }
  if (servername && !/^[A-Za-z0-9.-]{1,253}$/.test(servername)) return `REDIS_TLS_SERVERNAME must be a host name, got "${servername}"`;
  const out: RedisTls = {};
  for (const name of FILE_VARS) {
    const pem = readPem(env, name);
    if (typeof pem === 'object') return pem.error;
    if (pem !== undefined) out[name === 'REDIS_TLS_CA_FILE' ? 'ca' : name === 'REDIS_TLS_CERT_FILE' ? 'cert' : 'key'] = pem;
  }
  if (Boolean(out.cert) !== Boolean(out.key)) return `${out.cert ? 'REDIS_TLS_CERT_FILE needs REDIS_TLS_KEY_FILE' : 'REDIS_TLS_KEY_FILE needs REDIS_TLS_CERT_FILE'} (a client certificate and its private key, for mutual TLS)`;
  try {
    // Node accepts a CA text it cannot parse (and then trusts nothing): parse every block.
    for (const block of out.ca?.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? []) new X509Certificate(block);
    // OpenSSL parses them now: a bad certificate, or a key that is not the certificate's, fails here.
    createSecureContext({ ...(out.ca ? { ca: out.ca } : {}), ...(out.cert ? { cert: out.cert, key: out.key } : {}) });
  } catch (err) {
    return `REDIS_TLS_CA_FILE/CERT_FILE/KEY_FILE: ${(err as Error).message}`;
  }
  if (servername) out.servername = servername;
  return { ...(on ? { data: out } : {}), ...(sentinelsOn ? { sentinels: out } : {}) };
}
