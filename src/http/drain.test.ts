/** drainHttp on a plain node server: what each kind of connection sees while the server drains. */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { drainHttp } from './drain.js';

/** A server whose `/slow` answers once released; anything else at once. */
async function startServer(): Promise<{ server: http.Server; port: number; release(): void; slowArrived: Promise<void> }> {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let arrived!: () => void;
  const slowArrived = new Promise<void>((r) => (arrived = r));
  const server = http.createServer((req, res) => {
    if (req.url !== '/slow') return void res.end('fast');
    arrived();
    void released.then(() => res.end('slow'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, port: (server.address() as AddressInfo).port, release, slowArrived };
}

/** A raw connection: what it received, once the server closed it. */
function connect(port: number): { socket: net.Socket; received: Promise<string>; data: Promise<void> } {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  let gotData!: () => void;
  const data = new Promise<void>((r) => (gotData = r));
  socket.on('data', (d: Buffer) => {
    text += d.toString();
    gotData();
  });
  const received = new Promise<string>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('close', () => resolve(text));
  });
  return { socket, received, data };
}

const servers: http.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.closeAllConnections();
});

describe('drainHttp', () => {
  it('closes idle keep-alive connections at once, lets a request in flight finish, then resolves true', async () => {
    const s = await startServer();
    servers.push(s.server);
    const idle = connect(s.port);
    idle.socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    await idle.data; // answered, kept alive
    const busy = connect(s.port);
    busy.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await s.slowArrived;

    const drained = drainHttp(s.server, 3_600_000);
    expect(await idle.received).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*fast$/);
    s.release();
    // The answer in flight is whole, and its connection closes after it.
    expect(await busy.received).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*slow$/);
    expect(await drained).toBe(true);
  });

  it('a request arriving on a kept-alive connection while draining is answered with Connection: close', async () => {
    const s = await startServer();
    servers.push(s.server);
    const c = connect(s.port);
    // The second request is pipelined behind the one in flight, and read once the drain began.
    c.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await s.slowArrived;
    const drained = drainHttp(s.server, 3_600_000);
    c.socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    s.release();
    const text = await c.received;
    const second = text.slice(text.indexOf('slow') + 4);
    expect(second).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close\r\n[\s\S]*fast$/);
    expect(await drained).toBe(true);
  });

  it('cuts what is still running at the deadline and resolves false', async () => {
    const s = await startServer();
    servers.push(s.server);
    const c = connect(s.port);
    c.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await s.slowArrived;
    expect(await drainHttp(s.server, 50)).toBe(false);
    expect(await c.received).toBe('');
  });
});
