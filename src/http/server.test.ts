import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { hardenServer } from './server.js';

/** The idle cut-off's sweep, with short bounds: a silent socket goes, a slow but live one stays. */
describe('hardenServer: silent sockets', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const s of servers.splice(0)) {
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  async function start(handler: http.RequestListener = (_req, res) => res.end('ok')): Promise<number> {
    const server = http.createServer(handler);
    hardenServer(server, { maxConnections: 100 }, 20, 2000);
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return (server.address() as AddressInfo).port;
  }

  const closed = (socket: net.Socket) => new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));

  it('destroys a socket silent past the limit, and not before', async () => {
    const port = await start();
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    const t0 = Date.now();
    socket.write('GET / HTTP/1.1\r\n'); // a request line, then nothing
    const t1 = await closed(socket);
    expect(t1 - t0).toBeGreaterThanOrEqual(1950);
  });

  it('keeps a socket that still sends, however slowly', async () => {
    const port = await start();
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    let open = true;
    socket.once('close', () => (open = false));
    const headers = ['GET / HTTP/1.1\r\n', 'Host: x\r\n', ...Array.from({ length: 25 }, (_, i) => `X-${i}: ${i}\r\n`)];
    // A line every 100 ms for 2.7 s: longer than the 2 s limit, never silent for it.
    for (const h of headers) {
      socket.write(h);
      await new Promise((r) => setTimeout(r, 100));
      expect(open).toBe(true);
    }
    const answer = new Promise<string>((resolve) => socket.once('data', (d) => resolve(String(d))));
    socket.write('\r\n');
    expect(await answer).toMatch(/^HTTP\/1.1 200/);
    socket.destroy();
  });

  it('destroys a socket whose client stopped reading a response', async () => {
    const big = Buffer.alloc(64 * 1024 * 1024, 'x');
    const port = await start((_req, res) => res.end(big));
    const serverSide = new Promise<net.Socket>((resolve) => servers[0]!.once('connection', resolve));
    const socket = net.connect(port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause(); // never reads: the response stalls in the buffers
    const s = await serverSide;
    await closed(s);
    expect(s.destroyed).toBe(true);
    socket.destroy();
  });
});
