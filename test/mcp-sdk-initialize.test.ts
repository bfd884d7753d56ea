/**
 * Issue 29: our legacy `initialize` answer (src/mcp/server.ts) is built from public pieces of
 * the SDK (its supported revisions, its latest one) and our own server info, capabilities and
 * instructions — no longer by calling the SDK's private `_oninitialize`. This test holds it to
 * the SDK's own answer: the stock SDK `Server`, configured as ours, answers every requested
 * revision exactly as ours does. An SDK release that changes the negotiation or the fields of
 * the answer fails here (the SDK is pinned to a patch range, ~1.32.2, in package.json).
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEGACY_VERSIONS } from '../src/mcp/legacy.js';
import { McpFactory } from '../src/mcp/server.js';
import { SERVER_INFO } from '../src/version.js';
import { startTestApp, type TestApp } from './harness.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t.close();
});

/** The raw response of a server to one initialize request asking for `protocolVersion`. */
async function initialize(server: Server, protocolVersion: string): Promise<JSONRPCMessage> {
  const [ours, theirs] = InMemoryTransport.createLinkedPair();
  await server.connect(ours);
  const answer = new Promise<JSONRPCMessage>((resolve) => (theirs.onmessage = resolve));
  await theirs.start();
  await theirs.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'probe', version: '1' } } });
  const message = await answer;
  await server.close();
  return message;
}

/** The stock SDK server, configured as ours is: its own initialize handler answers. */
function stockServer(): Server {
  return new Server({ ...SERVER_INFO }, { capabilities: { tools: { listChanged: false } }, instructions: t.registry.instructions });
}

function ourServer(): Server {
  return new McpFactory({ registry: t.registry, calls: t.calls }).create({ caller: { keyId: null, ip: 'memory', transport: 'memory' }, headers: undefined });
}

describe('legacy initialize: our answer is the SDK’s own', () => {
  const requested = [...SUPPORTED_PROTOCOL_VERSIONS, '2026-07-28', '1999-01-01'];

  it.each(requested)('requesting %s', async (v) => {
    const stock = await initialize(stockServer(), v);
    expect(await initialize(ourServer(), v)).toStrictEqual(stock);
  });

  it('the SDK’s answer has the fields and negotiation this code reproduces', async () => {
    expect(await initialize(stockServer(), '2025-06-18')).toStrictEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { protocolVersion: '2025-06-18', capabilities: { tools: { listChanged: false } }, serverInfo: { ...SERVER_INFO }, instructions: t.registry.instructions },
    });
    // A revision the SDK does not serve is answered with its latest one.
    expect(await initialize(stockServer(), '1999-01-01')).toMatchObject({ result: { protocolVersion: LATEST_PROTOCOL_VERSION } });
    expect(LATEST_PROTOCOL_VERSION).toBe(LEGACY_VERSIONS[0]);
  });
});
