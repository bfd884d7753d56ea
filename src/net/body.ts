/**
 * Reading an answer: headers into a record, Content-Type parsed, the body decoded
 * (gzip / deflate / br) while its decoded size is counted against a cap.
 */
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { ToolError } from '../errors.js';
import { TooLargeError } from './fetch-errors.js';

/** What to do with a body past its cap: fail (502) or keep the first bytes and drop the rest. */
export type Overflow = 'error' | 'truncate';

export function headerRecord(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    out[k.toLowerCase()] = Array.isArray(v) ? v.join(', ') : v;
  }
  return { ...out };
}

export function parseContentType(value: string | undefined): { type: string; charset: string | null } {
  if (!value) return { type: '', charset: null };
  const [type = '', ...params] = value.split(';');
  let charset: string | null = null;
  for (const p of params) {
    const m = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(p);
    if (m) charset = m[1]!.toLowerCase();
  }
  return { type: type.trim().toLowerCase(), charset };
}

/** True when `type` is one of `allowed` (exact, or a prefix ending in '/'). */
export function mediaTypeAllowed(type: string, allowed: string[]): boolean {
  return allowed.some((a) => {
    const x = a.toLowerCase();
    return x.endsWith('/') ? type.startsWith(x) : type === x;
  });
}

/** Decoders for a Content-Encoding value, in the order to apply them ('deflate' is decided later). */
function decoders(encoding: string | undefined): Array<NodeJS.ReadWriteStream | 'deflate'> {
  if (!encoding) return [];
  const codings = encoding.toLowerCase().split(',').map((s) => s.trim()).filter((s) => s && s !== 'identity');
  if (codings.length > 3) throw new ToolError('UPSTREAM_ERROR', 'The response body could not be decoded');
  // Lenient about a missing end of stream, like browsers.
  const flush = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  return codings.reverse().map((c) => {
    if (c === 'gzip' || c === 'x-gzip') return zlib.createGunzip(flush);
    if (c === 'br') return zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    if (c === 'deflate') return 'deflate' as const;
    throw new ToolError('UPSTREAM_ERROR', 'The response uses an unsupported content encoding');
  });
}

/** Waits for the first bytes of a body and puts them back; null at end of stream. */
function peek(body: Readable, signal: AbortSignal): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const done = () => {
      body.off('readable', onReadable).off('end', onEnd).off('error', onError);
      signal.removeEventListener('abort', onAbort);
    };
    const onReadable = () => {
      const chunk = body.read() as Buffer | null;
      if (chunk === null) return;
      done();
      body.unshift(chunk);
      resolve(chunk);
    };
    const onEnd = () => (done(), resolve(null));
    const onError = (err: Error) => (done(), reject(err));
    const onAbort = () => (done(), reject(signal.reason));
    body.on('readable', onReadable).on('end', onEnd).on('error', onError);
    signal.addEventListener('abort', onAbort, { once: true });
    onReadable();
  });
}

/** A zlib stream for `deflate`: zlib-wrapped per the RFC, but some servers send it raw. */
function inflaterFor(first: Buffer | null): NodeJS.ReadWriteStream {
  const flush = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const b0 = first?.[0];
  const b1 = first?.[1];
  const wrapped = b0 !== undefined && (b0 & 0x0f) === 8 && (b1 === undefined || (b0 * 256 + b1) % 31 === 0);
  return wrapped ? zlib.createInflate(flush) : zlib.createInflateRaw(flush);
}

/** Stops the pipeline once a truncated body has what it keeps. */
class EnoughError extends Error {
  override readonly name = 'EnoughError';
}

/**
 * Reads a body stream through its decoders, counting decoded bytes. Past `maxBytes` it aborts
 * with TooLargeError, or, with `overflow: 'truncate'`, keeps the first `maxBytes` and destroys
 * the rest of the stream unread (the connection is closed, not drained).
 */
export async function readBody(body: Readable, encoding: string | undefined, maxBytes: number, signal: AbortSignal, overflow: Overflow = 'error'): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  let stopped: 'too-large' | 'enough' | null = null;
  const sink = async (source: AsyncIterable<Buffer>): Promise<void> => {
    for await (const chunk of source) {
      if (total + chunk.length > maxBytes) {
        if (overflow === 'error') {
          stopped = 'too-large';
          throw new TooLargeError('body too large');
        }
        chunks.push(chunk.subarray(0, maxBytes - total));
        total = maxBytes;
        stopped = 'enough';
        throw new EnoughError('truncated');
      }
      total += chunk.length;
      chunks.push(chunk);
    }
  };
  let stages: NodeJS.ReadWriteStream[];
  try {
    const codings = decoders(encoding);
    // Only the first decoder sees the raw body; a deflate coding later in the chain is zlib-wrapped.
    const first = codings[0] === 'deflate' ? await peek(body, signal) : null;
    stages = codings.map((c, i) => (c === 'deflate' ? (i === 0 ? inflaterFor(first) : zlib.createInflate()) : c));
  } catch (err) {
    discard(body);
    throw err;
  }
  try {
    // The variadic overloads of pipeline() do not type a spread of stages.
    await (pipeline as unknown as (...args: unknown[]) => Promise<void>)(body, ...stages, sink, { signal });
  } catch (err) {
    if (stopped === 'too-large') throw new TooLargeError('body too large');
    if (stopped !== 'enough') throw err;
  }
  return Buffer.concat(chunks, total);
}

/** Destroys a body stream nobody will read; its abort error is expected, not uncaught. */
export function discard(body: Readable): void {
  body.on('error', () => {});
  if (!body.destroyed) body.destroy();
}
