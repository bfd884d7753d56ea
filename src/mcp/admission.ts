import { isLimitedTransport } from '../auth/auth.js';
import type { CallPath } from '../core/call.js';
import type { Caller } from '../registry.js';

/**
 * Whether the limiter speaks for a caller's calls: then each call reports its limit headers
 * when it is admitted or refused (`onHeaders`). The embedded limiter answers before the call
 * returns; the shared (Redis) one a round trip later, so a streamed response, whose headers go
 * before its body, waits for it (./sse-stream.ts, ./server.ts).
 */
export function limiterSpeaksFor(calls: CallPath, caller: Caller): boolean {
  return calls.services.auth.enabled && isLimitedTransport(caller);
}
