/**
 * The load worker: reads and parses data files off the main thread at start-up (see
 * SegmentParser in ./segment-parser.ts). Answers each request with the parsed segment, the
 * file's bytes moved (not copied) back to the main thread.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { CorruptSegment, parseSegment } from './segment-parse.js';
import type { ParseReply, ParseRequest } from './segment-parser.js';

const port = parentPort!;
port.on('message', (m: ParseRequest) => {
  let reply: ParseReply;
  const transfer: ArrayBuffer[] = [];
  try {
    const buf = fs.readFileSync(m.file);
    const parsed = parseSegment(buf, m.def, m.fields);
    if (parsed.buf) {
      // Its own ArrayBuffer (not a slice of a shared pool), so that it can be moved.
      const own = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength ? buf : Buffer.from(buf);
      parsed.buf = own;
      transfer.push(own.buffer as ArrayBuffer, parsed.offsets!.buffer as ArrayBuffer);
    }
    reply = { seq: m.seq, parsed };
  } catch (err) {
    reply = err instanceof CorruptSegment ? { seq: m.seq, corrupt: err.message } : { seq: m.seq, failed: String(err) };
  }
  port.postMessage(reply, transfer);
});
