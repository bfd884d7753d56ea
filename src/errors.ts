/**
 * The one error type tools throw, and the one table that maps its codes to HTTP statuses
 * (docs/contract.md §2). Transports read this table; tools only pick a code.
 */
// types.js, not the state layer's index: this module is loaded wherever a tool runs (workers too).
import { STORE_RETRY_AFTER_SECONDS } from './state/types.js';

export const ERROR_STATUS = {
  INVALID_INPUT: 400,
  URL_NOT_ALLOWED: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  PARSE_ERROR: 422,
  RATE_LIMITED: 429,
  INTERNAL: 500,
  UPSTREAM_ERROR: 502,
  UPSTREAM_TIMEOUT: 504,
  FORBIDDEN: 403,
  STORAGE_UNAVAILABLE: 503,
} as const;

/** Longest error message sent to a caller; longer ones are cut (on a code point boundary). */
export const MAX_MESSAGE_CHARS = 1024;
/** Largest `details` sent to a caller, as JSON; larger ones are replaced by a note. */
export const MAX_DETAILS_CHARS = 8192;

/** `text` cut to at most `max` UTF-16 units without splitting a surrogate pair, with an ellipsis when cut. */
export function cutText(text: string, max = MAX_MESSAGE_CHARS): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return `${text.slice(0, end)}…`;
}

function boundedDetails(details: unknown): unknown {
  if (details === undefined || details === null || typeof details !== 'object') {
    return typeof details === 'string' ? cutText(details) : details;
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(details);
  } catch {
    return { note: 'details could not be serialised' };
  }
  return json !== undefined && json.length > MAX_DETAILS_CHARS ? { note: `details cut: ${json.length} characters` } : details;
}

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A failure with a stable code, a human message and optional machine-readable details. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  readonly details?: unknown;

  constructor(
    readonly code: ErrorCode,
    message: string,
    details?: unknown,
    /** Extra HTTP headers the REST face should send (Retry-After, WWW-Authenticate …). */
    readonly headers?: Record<string, string>,
  ) {
    // Bounded here, once: an error built from hostile input (a 30 MB unclosed-tag list) stays small.
    super(cutText(message));
    if (details !== undefined) this.details = boundedDetails(details);
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  /** The contract's error object: `{code, message, details?}`. */
  toJSON(): { code: ErrorCode; message: string; details?: unknown } {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

/** The error object of a wire answer: the contract's, with the request's id last when it has one (an additive member). */
export type ErrorObject = ReturnType<ToolError['toJSON']> & { request_id?: string };

/**
 * `err` as the error object of an answer to one request: `toJSON()` plus `request_id` (the
 * answer's X-Request-Id) when the request has one. Every face renders its errors with this, so
 * the id is in every error body and the rest of the object stays byte for byte as before.
 */
export function errorObject(err: ToolError, requestId: string | undefined): ErrorObject {
  const o: ErrorObject = err.toJSON();
  // toJSON() builds a new object: adding the member beats a spread (off V8's fast path on Node 20).
  if (requestId !== undefined) o.request_id = requestId;
  return o;
}

/**
 * Turns anything thrown into a ToolError. Unknown errors become INTERNAL and are logged with
 * their cause; their message is not shown to the caller.
 */
export function toToolError(err: unknown, log: (msg: string, cause: unknown) => void = defaultLog): ToolError {
  if (err instanceof ToolError) return err;
  if (isStorageFault(err)) {
    log('storage unavailable', (err as Error).message);
    // A write the primary made but too few replicas confirmed (REDIS_WAIT_REPLICAS) says so.
    const honest = err as { publicMessage?: string; publicDetails?: unknown };
    return new ToolError('STORAGE_UNAVAILABLE', honest.publicMessage ?? 'Storage is unavailable; nothing was changed. Retry in a moment.', honest.publicDetails, { 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) });
  }
  log('internal error', err);
  return new ToolError('INTERNAL', 'Internal error');
}

function defaultLog(msg: string, cause: unknown): void {
  // stderr only: stdout belongs to the protocol in stdio mode.
  console.error(`[devtoolbox] ${msg}:`, cause);
}

/**
 * Whether a failed write was made all the same: REDIS_WAIT_REPLICAS' "written on the primary,
 * not confirmed by the replicas" (src/state/redis/replicas.ts). Clean-up after such a failure
 * must not undo what the caller may find (and an idempotent retry must find it).
 */
export function writtenDespiteFailure(err: unknown): boolean {
  return (err as { publicDetails?: { writtenOnPrimary?: unknown } } | null)?.publicDetails?.writtenOnPrimary === true;
}

/** A store that cannot write or be reached (StoreError UNAVAILABLE / WRITE_FAILED): the caller may retry. */
function isStorageFault(err: unknown): boolean {
  if (!(err instanceof Error) || err.name !== 'StoreError') return false;
  const code = (err as Error & { code?: unknown }).code;
  return code === 'UNAVAILABLE' || code === 'WRITE_FAILED';
}
