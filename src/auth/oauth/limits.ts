import type { Services } from '../../services.js';
import { SlidingCounter } from '../limiter.js';
import { SharedSlidingCounter } from '../shared-limiter.js';

/**
 * Dynamic Client Registration (`POST /oauth/register`): at most this many per client address per
 * hour. Each registration is a stored client, so the bound is what one address can add to the
 * store. Generous, because hosted assistants register from a few shared egress addresses for all
 * of their users (Claude.ai registers once per connector a user adds).
 */
export const DCR_LIMIT = { limit: 100, windowMs: 60 * 60 * 1000 } as const;

/** The registration counter: in this process, or in the shared backend (Redis) so every instance counts together. */
export function dcrCounter(services: Pick<Services, 'store' | 'clock'>): SlidingCounter | SharedSlidingCounter {
  const shared = services.store.windows;
  return shared ? new SharedSlidingCounter(shared, DCR_LIMIT.limit, DCR_LIMIT.windowMs) : new SlidingCounter(services.clock, DCR_LIMIT.limit, DCR_LIMIT.windowMs);
}

/** The counter's subject for an address: its own namespace beside the API-key registration's. */
export const dcrSubject = (ip: string): string => `oauth-dcr\0${ip}`;
