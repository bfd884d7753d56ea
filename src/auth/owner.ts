import { createHash } from 'node:crypto';
import type { Caller } from '../core/caller.js';

/**
 * The owner a caller's state and limits are counted against: per key, or per client address for
 * keyless calls. Addresses are stored hashed: exact counting needs no raw IPs at rest.
 */
export function ownerKey(caller: Pick<Caller, 'keyId' | 'ip'>): string {
  if (caller.keyId !== null) return `key:${caller.keyId}`;
  return `ip:${createHash('sha256').update(caller.ip).digest('hex').slice(0, 24)}`;
}
