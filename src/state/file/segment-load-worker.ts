/**
 * The load worker: reads and parses a collection's data files off the main thread at start-up
 * (see SegmentLoadPool in ./segment-load-pool.ts). Answers each file with its parsed segment, the
 * file's bytes moved (not copied) back to the main thread, and keeps the index keys back
 * (KeyGroups): once every file is read, it sends each field's keys sorted, a chunk each time the
 * main thread asks for more.
 */
import fs from 'node:fs';
import { parentPort } from 'node:worker_threads';
import { CorruptSegment, KeyGroups, parseSegment } from './parse-segment.js';
import { KEYS_CHUNK, type LoadMore, type LoadReply, type LoadRequest } from './segment-load-pool.js';

const port = parentPort!;
const send = (reply: LoadReply, transfer: ArrayBuffer[] = []) => port.postMessage(reply, transfer);

/** Per load, the sorted keys' chunks still to send: one per `more` from the main thread. */
const outbox = new Map<number, Iterator<LoadReply>>();

function sendNext(seq: number): void {
  const next = outbox.get(seq)?.next();
  if (!next || next.done) return;
  if ('end' in next.value) outbox.delete(seq);
  send(next.value);
}

function* keyChunks(seq: number, keys: KeyGroups[]): Generator<LoadReply> {
  // Code-unit order, as the index trees keep them (see sortInSlices).
  for (let field = 0; field < keys.length; field++) {
    const list = keys[field]!.done();
    for (let at = 0; at < list.length; at += KEYS_CHUNK) yield { seq, field, keys: list.slice(at, at + KEYS_CHUNK) };
  }
  yield { seq, end: true };
}

port.on('message', (m: LoadRequest | LoadMore) => {
  if ('more' in m) return sendNext(m.seq);
  const keys = m.fields.map(() => new KeyGroups());
  for (let i = 0; i < m.files.length; i++) {
    let buf: Buffer;
    try {
      buf = fs.readFileSync(m.files[i]!);
    } catch (err) {
      return send({ seq: m.seq, i, failed: String(err) });
    }
    let parsed;
    try {
      parsed = parseSegment(buf, m.def, m.fields);
    } catch (err) {
      if (err instanceof CorruptSegment) return send({ seq: m.seq, i, corrupt: err.message });
      return send({ seq: m.seq, i, failed: String(err) });
    }
    for (let f = 0; f < keys.length; f++) keys[f]!.add(parsed.values![f]!, parsed.ids!);
    parsed.values = undefined;
    const transfer: ArrayBuffer[] = [parsed.hashes.buffer as ArrayBuffer];
    if (parsed.buf) {
      // The table reads an id from the bytes when it needs one (a million strings cost the main
      // thread more to receive than the few it ever reads).
      parsed.ids = undefined;
      // Its own ArrayBuffer (not a slice of a shared pool), so that it can be moved.
      const own = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength ? buf : Buffer.from(buf);
      parsed.buf = own;
      transfer.push(own.buffer as ArrayBuffer, parsed.offsets!.buffer as ArrayBuffer);
    }
    send({ seq: m.seq, i, parsed }, transfer);
  }
  outbox.set(m.seq, keyChunks(m.seq, keys));
  sendNext(m.seq);
});
