import { ToolError } from '../errors.js';

/** A body the client stopped sending (aborted, reset, timed out): not a server error, no stack in the log. */
function cutOff(): ToolError {
  return new ToolError('INVALID_INPUT', 'The request body was not received completely');
}

/** Reads a request body as text, refusing more than `limit` bytes without buffering them. */
export async function readBodyText(req: Request, limit: number): Promise<string> {
  try {
    return await readLimited(req, limit);
  } catch (err) {
    throw err instanceof ToolError ? err : cutOff();
  }
}

async function readLimited(req: Request, limit: number): Promise<string> {
  const len = req.headers.get('content-length');
  if (len !== null && /^\d+$/.test(len) && Number(len) > limit) {
    throw new ToolError('PAYLOAD_TOO_LARGE', `Request body is larger than ${limit} bytes`, { limit });
  }
  // With a Content-Length the light request of node-server reads the body directly; touching
  // req.body would build a full web Request (measurably slower).
  if (len !== null && /^\d+$/.test(len)) return req.text();
  if (!req.body) return '';
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw new ToolError('PAYLOAD_TOO_LARGE', `Request body is larger than ${limit} bytes`, { limit });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** `application/json` or any `application/*+json`. */
export function isJsonType(ct: string | null | undefined): boolean {
  if (!ct) return false;
  const t = ct.split(';')[0]!.trim().toLowerCase();
  return t === 'application/json' || (t.startsWith('application/') && t.endsWith('+json'));
}

/** A JSON request body: `{}` when empty, 415 for another type, 400 when it does not parse. */
export async function readJsonBody(req: Request, limit: number): Promise<unknown> {
  const text = await readBodyText(req, limit);
  if (text.trim() === '') return {};
  if (!isJsonType(req.headers.get('content-type'))) {
    throw new ToolError('UNSUPPORTED_MEDIA_TYPE', 'Send the body as JSON with Content-Type: application/json');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolError('INVALID_INPUT', 'The request body is not valid JSON');
  }
}
