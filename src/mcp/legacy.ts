/**
 * What the HTTP face needs to know of the SDK (./server.ts) without importing it: the SDK
 * takes ≈ 0.15 s to import and serves only what our dispatch leaves to it, so the HTTP face
 * imports it in the background (while the store loads) instead of before it listens.
 */

/**
 * The legacy (2025-11-25 and older) revisions the SDK serves: its SUPPORTED_PROTOCOL_VERSIONS
 * (test/mcp-eras.test.ts checks that they are the same list).
 */
export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

export function isJsonContentType(ct: string | null): boolean {
  if (!ct) return false;
  if (ct === 'application/json') return true;
  return ct.split(';')[0]!.trim().toLowerCase() === 'application/json';
}

/**
 * What the SDK's streamable HTTP transport demands of a POST before it looks at the body
 * (Accept of both types, Content-Type application/json): a legacy request that fails it is left
 * to the SDK, so its 406/415 answers stay the SDK's.
 */
export function sdkWouldAccept(accept: string | null, contentType: string | null): boolean {
  return accept !== null && accept.includes('application/json') && accept.includes('text/event-stream') && isJsonContentType(contentType);
}
