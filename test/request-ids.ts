/**
 * Comparing answers modulo their request ids. Every error answer names its request
 * (`request_id` in a REST error object, in a JSON-RPC error's `data`, in a failed tool call's
 * error object — docs/operations.md, Request ids), and two answers to the same request differ
 * in nothing else. The helpers check each id against the answer's X-Request-Id, then take it
 * out, so a test compares the rest whole, as strictly as before.
 */
import { expect } from 'vitest';

/** The ids this server issues: a random per-process prefix and a base-36 counter. */
export const REQUEST_ID = /^[A-Za-z0-9]{8}-[0-9a-z]+$/;

/** A string `request_id` in JSON, or in JSON inside a JSON string (a tool result's text block); not a schema naming the member (openapi.json). */
const ANY_ID = /\\*"request_id\\*":\\*"/;

/**
 * The text of an answer (JSON, or an SSE stream of JSON messages) without the request ids it
 * names. Each one must be `id`, the answer's X-Request-Id: any other `request_id` fails the test.
 * A JSON-RPC error's `data` that held only the id goes with it (without an id there was none).
 */
export function withoutRequestId(text: string, id: string | null): string {
  if (id === null) {
    expect(text, 'a request_id in an answer without X-Request-Id').not.toMatch(ANY_ID);
    return text;
  }
  const q = JSON.stringify(id);
  const esc = JSON.stringify(q).slice(1, -1);
  const out = text
    .replaceAll(`,"data":{"request_id":${q}}`, '')
    .replaceAll(`,"request_id":${q}`, '')
    .replaceAll(`,${JSON.stringify('"request_id":').slice(1, -1)}${esc}`, '');
  expect(out, `a request_id other than the answer's X-Request-Id ${id}`).not.toMatch(ANY_ID);
  return out;
}

/** `res`'s body as JSON, its request ids checked against its X-Request-Id and taken out. */
export async function jsonWithoutRequestId(res: Response): Promise<unknown> {
  return JSON.parse(withoutRequestId(await res.text(), res.headers.get('x-request-id')));
}

/**
 * An error object as a client saw it (a failed call's, a JSON-RPC error's data), without its
 * `request_id`: one of ours (REQUEST_ID) when `expected` is not given, else exactly `expected`.
 */
export function withoutIdField<T>(value: T, expected?: string): T {
  if (typeof value !== 'object' || value === null || !('request_id' in value)) return value;
  const { request_id: id, ...rest } = value as Record<string, unknown>;
  if (expected === undefined) expect(id).toMatch(REQUEST_ID);
  else expect(id).toBe(expected);
  return rest as T;
}
