/** HTTP/1.1 on a raw socket, for tests that need what fetch hides: pipelining, the framing of answers. */
import net from 'node:net';

/** A raw keep-alive connection: requests are written as they come (pipelined), answers read at its end. */
export function rawConnection(port: number): { send(text: string): void; answers: Promise<RawAnswer[]> } {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  const answers = new Promise<RawAnswer[]>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve(parseAnswers(Buffer.concat(chunks))));
  });
  return { send: (text) => socket.write(text), answers };
}

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The HTTP/1.1 answers in `data`, one after another (Content-Length or chunked bodies). */
export function parseAnswers(data: Buffer): RawAnswer[] {
  const out: RawAnswer[] = [];
  let at = 0;
  while (at < data.length) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) throw new Error(`an incomplete answer: ${data.subarray(at).toString()}`);
    const [statusLine = '', ...lines] = data.subarray(at, end).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    at = end + 4;
    let body: Buffer;
    if (headers['transfer-encoding'] === 'chunked') {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = data.indexOf('\r\n', at);
        const size = parseInt(data.subarray(at, lineEnd).toString(), 16);
        at = lineEnd + 2 + size + 2;
        if (size === 0) break;
        parts.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers['content-length'] ?? 0);
      body = data.subarray(at, at + length);
      at += length;
    }
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body: body.toString() });
  }
  return out;
}
