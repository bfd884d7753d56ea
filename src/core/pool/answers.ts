/** What the pool answers a caller: its own refusals, and a worker's answer rebuilt on this side. */
import { ToolError } from '../../errors.js';
import { richResult, type RichResult } from '../../registry.js';
import type { ErrorParts, ResultParts } from './protocol.js';

/** Every worker busy and the queue full. */
export const busyError = (): ToolError =>
  new ToolError('RATE_LIMITED', 'The server is busy with other heavy calls; retry in a moment', undefined, { 'Retry-After': '1' });
/** The pool is closing. */
export const closedError = (): ToolError => new ToolError('RATE_LIMITED', 'The server is shutting down', undefined, { 'Retry-After': '1' });

/*
 * Deadline and memory cap → 422 PARSE_ERROR: the input was read but is too expensive to
 * process; the same input will fail the same way, so it is not a 429/503 (which invite a
 * retry) nor a 504 (which blames an upstream). A client can act on it: send less.
 */
/** The job passed its deadline. */
export const deadlineError = (ms: number): ToolError =>
  new ToolError('PARSE_ERROR', `The input is too expensive to process within ${ms / 1000} s; send a smaller or simpler input`, { reason: 'deadline', limitMs: ms });
/** The job's worker reached its heap cap. */
export const memoryError = (mb: number): ToolError =>
  new ToolError('PARSE_ERROR', `The input needs more memory than one call may use (${mb} MB); send a smaller or simpler input`, { reason: 'memory', limitMb: mb });
/** Anything the caller cannot act on (a worker that died, an unreadable message). */
export const internalError = (): ToolError => new ToolError('INTERNAL', 'Internal error');

/** Same answer as the fetcher's for a caller that went away. */
export function cancelled(signal: AbortSignal): ToolError {
  return signal.reason instanceof ToolError ? signal.reason : new ToolError('UPSTREAM_TIMEOUT', 'The request was cancelled');
}

/** The worker's ToolError, as it was thrown there. */
export function rebuildError(p: ErrorParts): ToolError {
  return new ToolError(p.code, p.message, p.details, p.headers);
}

/** The worker's RichResult, as the handler returned it there. */
export function rebuildResult(p: ResultParts): RichResult<Record<string, unknown>> {
  const r: Omit<RichResult<Record<string, unknown>>, symbol> = { json: p.json };
  // A view on the moved buffer, not a copy; Buffer because that is what handlers produce.
  if (p.body) r.body = { ...p.body, data: Buffer.from(p.body.data.buffer, p.body.data.byteOffset, p.body.data.byteLength) };
  if (p.content) r.content = p.content;
  return richResult(r);
}
