import { ToolError } from '../errors.js';
import { headersOf, type HeaderGet } from './headers.js';

/**
 * How much of a refused (too large) body is still read and thrown away before the 413 goes out,
 * and for how long. A client that writes its whole body before it reads the answer (a stream
 * pipeline, Python's requests, curl without `Expect`) would otherwise see the connection close
 * under its writes (EPIPE / premature close) instead of the 413. Like nginx's lingering close,
 * but bounded: past either bound the 413 goes out at once with `Connection: close`.
 */
export const DISCARD_MAX_BYTES = 64 * 1024 * 1024;
export const DISCARD_MAX_MS = 10_000;

/** A body the client stopped sending (aborted, reset, timed out): not a server error, no stack in the log. */
function cutOff(): ToolError {
  return new ToolError('INVALID_INPUT', 'The request body was not received completely');
}

function tooLarge(limit: number, drained: boolean): ToolError {
  return new ToolError('PAYLOAD_TOO_LARGE', `Request body is larger than ${limit} bytes`, { limit }, drained ? undefined : { Connection: 'close' });
}

/**
 * Reads a request body as text, refusing more than `limit` bytes without buffering them.
 * `header`: how to read the request's headers (see headersOf; the web Headers by default).
 */
export function readBodyText(req: Request, limit: number, header: HeaderGet = headersOf(req, undefined)): Promise<string> {
  return readLimited(req, limit, header).then(undefined, notReceived);
}

/** A failed read: the 413 as it is, anything else (the client went away) as cutOff. */
function notReceived(err: unknown): Promise<never> {
  return Promise.reject(err instanceof ToolError ? err : cutOff());
}

/**
 * Reads and drops the rest of a body, within DISCARD_MAX_BYTES (counting `seen`, what was read
 * already) and DISCARD_MAX_MS. True when the body ended within the bounds.
 */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, seen: number): Promise<boolean> {
  const deadline = Date.now() + DISCARD_MAX_MS;
  let total = seen;
  try {
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) return false;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), left);
      });
      const r = await Promise.race([reader.read(), timeout]).finally(() => clearTimeout(timer));
      if (r === 'timeout') return false;
      if (r.done) return true;
      total += r.value.byteLength;
      if (total > DISCARD_MAX_BYTES) return false;
    }
  } catch {
    return false; // the client went away: nobody is left to read the answer
  } finally {
    // A body still flowing past the bounds: stop reading it (the connection then closes).
    reader.cancel().catch(() => {});
  }
}

/** The 413 for a body over `limit`, after reading the rest of it within the discard bounds. */
async function refuse(req: Request, reader: ReadableStreamDefaultReader<Uint8Array> | null, seen: number, limit: number): Promise<never> {
  const r = reader ?? req.body?.getReader() ?? null;
  const drained = r === null ? true : await discardRest(r, seen);
  throw tooLarge(limit, drained);
}

/** The request's Content-Length when it has a well-formed one, else null. */
function declaredLength(header: HeaderGet): number | null {
  const len = header('content-length');
  return len !== null && /^\d+$/.test(len) ? Number(len) : null;
}

/**
 * The body's text within `limit`. Not async: a body whose Content-Length fits is the light
 * request's own read, one promise hop from the socket (issue 21).
 */
function readLimited(req: Request, limit: number, header: HeaderGet): Promise<string> {
  try {
    const declared = declaredLength(header);
    if (declared !== null && declared > limit) {
      // Too large to even start: answer at once; the connection closes under the client.
      if (declared > DISCARD_MAX_BYTES) return Promise.reject(tooLarge(limit, false));
      return refuse(req, null, 0, limit);
    }
    // With a Content-Length the light request of node-server reads the body directly; touching
    // req.body would build a full web Request (measurably slower).
    if (declared !== null) return req.text();
    if (!req.body) return Promise.resolve('');
    return readChunks(req, req.body.getReader(), limit);
  } catch (err) {
    return Promise.reject(err); // rejected, never thrown: callers chain on the promise
  }
}

/** A body without a Content-Length, chunk by chunk, refused past `limit`. */
async function readChunks(req: Request, reader: ReadableStreamDefaultReader<Uint8Array>, limit: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) return refuse(req, reader, size, limit);
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `application/json` or any `application/*+json`. */
export function isJsonType(ct: string | null | undefined): boolean {
  if (!ct) return false;
  if (ct === 'application/json') return true;
  const t = ct.split(';')[0]!.trim().toLowerCase();
  return t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'));
}

/** A JSON request body: `{}` when empty, 415 for another type, 400 when it does not parse. */
export function readJsonBody(req: Request, limit: number, header: HeaderGet = headersOf(req, undefined)): Promise<unknown> {
  return readLimited(req, limit, header).then((text) => parseJsonBody(text, header), notReceived);
}

function parseJsonBody(text: string, header: HeaderGet): unknown {
  if (text.length === 0) return {};
  if (!isJsonType(header('content-type'))) {
    if (text.trim() === '') return {};
    throw new ToolError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
  }
  try {
    return JSON.parse(text);
  } catch {
    if (text.trim() === '') return {};
    throw new ToolError('INVALID_INPUT', 'The request body is not valid JSON');
  }
}
