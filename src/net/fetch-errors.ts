/**
 * How a failed fetch is reported: every cause becomes a ToolError with a generic message, so
 * the service cannot be used as a port scanner (docs/fetching.md, "Policy").
 */
import { ToolError } from '../errors.js';
import { MSG_BLOCKED } from './address-policy.js';

export const MSG_CONNECT = 'Could not connect to the URL';
export const MSG_TIMEOUT = 'The URL did not answer in time';

/** Thrown inside the connector; mapped to URL_NOT_ALLOWED. */
export class BlockedAddressError extends Error {
  override readonly name = 'BlockedAddressError';
  readonly code = 'DTB_BLOCKED_ADDRESS';
}

/** The decoded body passed its cap. */
export class TooLargeError extends Error {
  override readonly name = 'TooLargeError';
}

/** The reason the overall deadline aborts a fetch with. */
export class DeadlineError extends Error {
  override readonly name = 'DeadlineError';
}

const TIMEOUT_CODES = ['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT', 'ESOCKETTIMEDOUT'];

/** The ToolError a failed fetch becomes, by cause (undici and Node nest causes several deep). */
export function classify(err: unknown, deadline: AbortSignal, callerSignal: AbortSignal | undefined, maxBytes: number): ToolError {
  if (err instanceof ToolError) return err;
  if (deadline.aborted && deadline.reason instanceof DeadlineError) return new ToolError('UPSTREAM_TIMEOUT', MSG_TIMEOUT);
  if (callerSignal?.aborted) return new ToolError('UPSTREAM_TIMEOUT', 'The request was cancelled');
  const seen = new Set<unknown>();
  const codes: string[] = [];
  let tooLarge = false;
  let blocked = false;
  const walk = (e: unknown): void => {
    if (!e || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    if (e instanceof BlockedAddressError) blocked = true;
    if (e instanceof TooLargeError) tooLarge = true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string') codes.push(code);
    walk((e as { cause?: unknown }).cause);
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) errors.forEach(walk);
  };
  walk(err);
  if (blocked) return new ToolError('URL_NOT_ALLOWED', MSG_BLOCKED);
  if (tooLarge) return new ToolError('UPSTREAM_ERROR', `The response body is larger than ${maxBytes} bytes`);
  if (codes.some((c) => TIMEOUT_CODES.includes(c))) return new ToolError('UPSTREAM_TIMEOUT', MSG_TIMEOUT);
  if (codes.some((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'ENODATA')) {
    return new ToolError('UPSTREAM_ERROR', 'The URL\'s host name could not be resolved');
  }
  if (codes.some((c) => c.startsWith('Z_'))) return new ToolError('UPSTREAM_ERROR', 'The response body could not be decoded');
  if (codes.some((c) => c.startsWith('HPE_') || c === 'UND_ERR_INVALID_ARG' || c === 'UND_ERR_RES_CONTENT_LENGTH_MISMATCH')) {
    return new ToolError('UPSTREAM_ERROR', 'The server sent a malformed HTTP response');
  }
  return new ToolError('UPSTREAM_ERROR', MSG_CONNECT);
}
