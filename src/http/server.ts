import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Config } from '../config.js';

/**
 * Socket limits of the HTTP server, so that slow or silent clients cannot hold it:
 * - headers must arrive within 15 s (slowloris, and silent connections that never send a
 *   request), a whole request within 60 s — which is also the minimum body rate: a 10 MiB body
 *   must average ≥ 175 KiB/s. Node checks these every `connectionsCheckingInterval` (30 s by
 *   default, which let such sockets live 66–82 s): here every 2 s.
 * - keep-alive connections close 5 s after their last response; any socket silent for 120 s
 *   (a stuck response) is destroyed.
 */
export const SERVER_OPTIONS: ServerOptions = {
  headersTimeout: 15_000,
  requestTimeout: 60_000,
  keepAliveTimeout: 5_000,
  connectionsCheckingInterval: 2_000,
};

/** How often silent sockets are looked for, and how long one may stay silent. */
export const IDLE_SWEEP_MS = 10_000;
export const IDLE_LIMIT_MS = 120_000;

/**
 * At most MAX_CONNECTIONS sockets at once (more are dropped at accept), and the idle cut-off: a
 * socket that neither read nor wrote a byte for IDLE_LIMIT_MS (to IDLE_SWEEP_MS) is destroyed
 * (a stuck response, a client that stopped reading). A sweep over the open sockets rather than
 * `server.setTimeout`: node re-arms that timer on every request of a keep-alive connection, a
 * new timer object per request (≈ 1 µs of a small call, issue 21); the sweep costs nothing per
 * request. Stops with the server.
 */
export function hardenServer(server: Server, config: Pick<Config, 'maxConnections'>, sweepMs = IDLE_SWEEP_MS, limitMs = IDLE_LIMIT_MS): Server {
  server.maxConnections = config.maxConnections;
  const sockets = new Map<Socket, { bytes: number; since: number }>();
  server.on('connection', (socket: Socket) => {
    sockets.set(socket, { bytes: 0, since: Date.now() });
    socket.once('close', () => sockets.delete(socket));
  });
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [socket, seen] of sockets) {
      const bytes = socket.bytesRead + socket.bytesWritten;
      if (bytes !== seen.bytes) {
        seen.bytes = bytes;
        seen.since = now;
      } else if (now - seen.since >= limitMs) {
        sockets.delete(socket);
        socket.destroy();
      }
    }
  }, sweepMs);
  sweep.unref();
  server.once('close', () => clearInterval(sweep));
  return server;
}
