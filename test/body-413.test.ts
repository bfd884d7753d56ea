// A 413 that reaches the client. The server used to answer from Content-Length and close while
// the client was still writing: a client that writes its whole body before reading (a stream
// pipeline, Python's requests, curl without Expect) got EPIPE / a premature close, not the 413.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { DISCARD_MAX_BYTES } from '../src/http/body.js';
import { tempDir, useListeningApp } from './harness.js';
import { itNeeding } from './machine.js';

const MiB = 1024 * 1024;
const t = useListeningApp();
let port: number;
beforeAll(async () => {
  port = Number(new URL(t.url).port);
});

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** node:http, body written through a stream pipeline: the response is read only after the last byte. */
async function pipelinePost(p: string, total: number, opts: { chunked?: boolean; pauseMs?: number } = {}): Promise<Answer> {
  const headers: Record<string, string | number> = { 'content-type': 'application/json' };
  if (!opts.chunked) headers['content-length'] = total;
  const req = http.request({ host: '127.0.0.1', port, path: p, method: 'POST', headers, agent: false });
  const response = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once('response', resolve);
    req.once('error', reject);
  });
  response.catch(() => {});
  async function* source(): AsyncGenerator<Buffer> {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    for (let sent = 0; sent < total; sent += chunk.length) {
      // (no pause after the last chunk: the answer may come, and the socket close, right after it)
      if (opts.pauseMs && sent > 0) await new Promise((r) => setTimeout(r, opts.pauseMs));
      yield sent + chunk.length <= total ? chunk : chunk.subarray(0, total - sent);
    }
  }
  await pipeline(Readable.from(source()), req);
  const res = await response;
  let body = '';
  for await (const d of res) body += String(d);
  return { status: res.statusCode!, headers: res.headers, body };
}

function curl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const hasCurl = (() => {
  try {
    return fs.statSync('/usr/bin/curl').isFile();
  } catch {
    return false;
  }
})();
const curlNeed = { program: '/usr/bin/curl', present: hasCurl, install: 'apt-get install -y curl' };

describe('413 reaches the client', () => {
  it('node:http writing 11 MiB to /api/file-process through a pipeline gets the 413, not EPIPE', async () => {
    const r = await pipelinePost('/api/file-process', 11 * MiB);
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body)).toMatchObject({ success: false, error: { code: 'PAYLOAD_TOO_LARGE', details: { limit: 10 * MiB } } });
    // The body was read to its end: the connection is not closed under the client.
    // (agent: false asks for Connection: close; keep-alive is checked below)
  });

  it('a slow writer (over the 500 ms node-server drain) still gets the 413', async () => {
    const r = await pipelinePost('/api/html-entity', 3 * MiB, { pauseMs: 25 });
    expect(r.status).toBe(413);
  });

  it('a chunked body (no Content-Length) over the limit gets the 413 after its last chunk', async () => {
    const r = await pipelinePost('/api/file-process', 11 * MiB, { chunked: true });
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  it('/mcp: the JSON-RPC 413 reaches a pipeline writer too', async () => {
    const r = await pipelinePost('/mcp', 11 * MiB);
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body)).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
  });

  it('fetch (undici) sending 11 MiB gets the 413', async () => {
    const r = await fetch(`${t.url}/api/file-process`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.alloc(11 * MiB, 'x') });
    expect(r.status).toBe(413);
    expect(await r.json()).toMatchObject({ error: { code: 'PAYLOAD_TOO_LARGE' } });
  });

  itNeeding(curlNeed, 'curl --data-binary of 11 MiB gets the 413, with and without Expect: 100-continue', async () => {
    const dir = tempDir('dtb-413-');
    const file = path.join(dir, 'big.json');
    fs.writeFileSync(file, Buffer.alloc(11 * MiB, 'x'));
    try {
      for (const extra of [[], ['-H', 'Expect:']]) {
        const r = await curl(['-o', '/dev/null', '-w', '%{http_code}', '-H', 'content-type: application/json', ...extra, '--data-binary', `@${file}`, `${t.url}/api/file-process`]);
        expect(r.stderr).toBe('');
        expect(r.stdout).toBe('413');
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it(`past ${DISCARD_MAX_BYTES / MiB} MiB declared, answers at once with Connection: close (nothing is read)`, async () => {
    const r = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/api/file-process', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': DISCARD_MAX_BYTES + 1 } });
      req.on('response', resolve);
      req.on('error', reject);
      req.flushHeaders();
    });
    expect(r.statusCode).toBe(413);
    expect(r.headers.connection).toBe('close');
    r.resume();
    r.socket.destroy();
  });

  it('the connection stays usable after a drained 413 (keep-alive)', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const post = (body: Buffer) =>
        new Promise<{ status: number; socket: unknown }>((resolve, reject) => {
          const req = http.request({ host: '127.0.0.1', port, path: '/api/base-convert', method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode!, socket: req.socket }));
          });
          req.on('error', reject);
          req.end(body);
        });
      const first = await post(Buffer.alloc(2 * MiB, 'x'));
      expect(first.status).toBe(413);
      const second = await post(Buffer.from('{"value":"255"}'));
      expect(second.status).toBe(200);
      expect(second.socket).toBe(first.socket);
    } finally {
      agent.destroy();
    }
  });
});
