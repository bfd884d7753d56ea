import { ERROR_STATUS, type ErrorCode } from '../errors.js';
import type { JsonSchema } from '../json-schema.js';
import type { AnyTool, ToolGroup } from '../registry.js';

/**
 * Error codes a tool can answer with: the common ones (bad input, keys, browser origin, limits;
 * body size and type for POST; URL errors for tools that fetch), its family's and its own.
 */
export function toolErrorCodes(tool: AnyTool, method: string, group?: Pick<ToolGroup, 'errors'>): ErrorCode[] {
  // FORBIDDEN: any browser request from an origin (or, on loopback, a Host) that is not allowed.
  const codes: ErrorCode[] = ['INVALID_INPUT', 'UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED'];
  if (method === 'POST' || method === 'PATCH') codes.push('PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  codes.push(...(group?.errors ?? []), ...(tool.errors ?? []));
  if (tool.annotations.openWorldHint) codes.push('URL_NOT_ALLOWED', 'UPSTREAM_ERROR', 'UPSTREAM_TIMEOUT');
  return [...new Set(codes)];
}

/** A typical message per error code, for the error examples of every operation. */
const ERROR_EXAMPLES: Record<ErrorCode, { message: string; details?: unknown }> = {
  INVALID_INPUT: { message: 'Invalid input', details: [{ path: 'value', message: 'Invalid input: expected string, received number' }] },
  URL_NOT_ALLOWED: { message: 'URL resolves to a non-public address (127.0.0.1)' },
  UNAUTHORIZED: { message: 'Unknown API key' },
  FORBIDDEN: { message: 'Origin not allowed' },
  NOT_FOUND: { message: 'Not found' },
  METHOD_NOT_ALLOWED: { message: 'Method not allowed' },
  CONFLICT: { message: 'Already taken' },
  PAYLOAD_TOO_LARGE: { message: 'Request body is larger than 1048576 bytes', details: { limit: 1048576 } },
  UNSUPPORTED_MEDIA_TYPE: { message: 'Send the body as JSON with Content-Type: application/json' },
  PARSE_ERROR: { message: 'Unexpected token at line 1, column 9', details: { line: 1, column: 9 } },
  RATE_LIMITED: { message: 'Rate limit exceeded: 10 calls per minute', details: { retryAfter: 42 } },
  INTERNAL: { message: 'Internal error' },
  UPSTREAM_ERROR: { message: 'The URL answered 503' },
  UPSTREAM_TIMEOUT: { message: 'The URL did not answer within 10000 ms' },
  STORAGE_UNAVAILABLE: { message: 'Storage is unavailable; nothing was changed. Retry in a moment.' },
};

export const errorSchema: JsonSchema = {
  type: 'object',
  required: ['success', 'error'],
  properties: {
    success: { const: false },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: {
        code: { type: 'string', enum: Object.keys(ERROR_STATUS) },
        message: { type: 'string' },
        details: { description: 'e.g. the failing fields `[{path, message}]`, or `{line, column}`' },
        request_id: { type: 'string', description: "The answer's X-Request-Id: quote it to support (docs/operations.md, Request ids)" },
      },
    },
  },
};

function errorContent(codes: ErrorCode[]): Record<string, unknown> {
  const examples: Record<string, unknown> = {};
  for (const code of codes) {
    const e = ERROR_EXAMPLES[code];
    examples[code] = { summary: code, value: { success: false, error: { code, ...e } } };
  }
  return { 'application/json': { schema: { $ref: '#/components/schemas/Error' }, examples } };
}

/** The error responses of `codes` (docs/contract.md, Errors), one entry per status (codes sharing a status are listed together). */
export function errorResponses(codes: ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = ERROR_STATUS[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, unknown> = {};
  for (const [status, list] of [...byStatus].sort((x, y) => x[0] - y[0])) {
    out[String(status)] = {
      description: list.join(' or '),
      ...(status === 503
        ? { headers: { 'Retry-After': { description: 'Seconds after which a retry should work', schema: { type: 'integer' } } } }
        : {}),
      ...(status === 429
        ? {
            headers: {
              'Retry-After': { description: 'Seconds until a call is allowed again', schema: { type: 'integer' } },
              'RateLimit-Limit': { description: 'Calls allowed in the window that is spent', schema: { type: 'integer' } },
              'RateLimit-Remaining': { description: 'Calls left in that window (0)', schema: { type: 'integer' } },
              'RateLimit-Reset': { description: 'Seconds until that window resets', schema: { type: 'integer' } },
            },
          }
        : {}),
      content: errorContent(list),
    };
  }
  return out;
}

