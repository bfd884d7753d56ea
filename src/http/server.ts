import type { Server, ServerOptions } from 'node:http';
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

/** At most MAX_CONNECTIONS sockets at once (more are dropped at accept), and the idle cut-off. */
export function hardenServer(server: Server, config: Pick<Config, 'maxConnections'>): Server {
  server.maxConnections = config.maxConnections;
  server.setTimeout(120_000, (socket) => socket.destroy());
  return server;
}
