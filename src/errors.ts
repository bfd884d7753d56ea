/**
 * The one error type tools throw, and the one table that maps its codes to HTTP statuses
 * (CONTRACT §2). Transports read this table; tools only pick a code.
 */
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
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** A failure with a stable code, a human message and optional machine-readable details. */
export class ToolError extends Error {
  override readonly name = 'ToolError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    /** Extra HTTP headers the REST face should send (Retry-After, WWW-Authenticate …). */
    readonly headers?: Record<string, string>,
  ) {
    super(message);
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

/**
 * Turns anything thrown into a ToolError. Unknown errors become INTERNAL and are logged with
 * their cause; their message is not shown to the caller.
 */
export function toToolError(err: unknown, log: (msg: string, cause: unknown) => void = defaultLog): ToolError {
  if (err instanceof ToolError) return err;
  log('internal error', err);
  return new ToolError('INTERNAL', 'Internal error');
}

function defaultLog(msg: string, cause: unknown): void {
  // stderr only: stdout belongs to the protocol in stdio mode.
  console.error(`[devtoolbox] ${msg}:`, cause);
}
