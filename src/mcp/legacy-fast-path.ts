/**
 * Legacy (2025-11-25 and older) `tools/list` and `tools/call` of a known tool without a
 * progress token, answered without the SDK: byte for byte what the SDK answers (member order
 * included), at a fraction of its per-request cost. Anything else of the legacy era — every
 * error included — is left to the SDK (./server.ts).
 */
import type { CallOutcome, CallPath } from '../core/call.js';
import type { Caller, Registry } from '../registry.js';
import { callResultJson, reply, withId, type HttpAnswer } from './answers.js';
import { isObject, type Json } from './wire.js';

export class LegacyFastPath {
  constructor(
    readonly registry: Registry,
    readonly calls: CallPath,
    /** `{"result":{"tools":[…]}` pre-serialised (./answers.ts resultHead). */
    readonly listHead: Buffer,
    /** The same naming the tools' MCP Apps views, for a session that declared the extension (./session.ts). */
    readonly appsListHead: Buffer,
  ) {}

  /**
   * The answer, or undefined: not a request this path takes (the SDK answers it). `apps`: the
   * request's session declared MCP Apps. `requestId`: named by a failed call's error object.
   */
  answer(msg: Json, caller: Caller, signal: () => AbortSignal, apps = false, requestId?: string): HttpAnswer | Promise<HttpAnswer> | undefined {
    const id = msg.id;
    if (msg.jsonrpc !== '2.0' || (typeof id !== 'string' && typeof id !== 'number')) return undefined;
    const params = msg.params;
    if (params !== undefined && !isObject(params)) return undefined;
    const meta = params?._meta;
    if (meta !== undefined && (!isObject(meta) || meta.progressToken !== undefined)) return undefined;
    if (msg.method === 'tools/list') {
      if (params?.cursor !== undefined && typeof params.cursor !== 'string') return undefined;
      return reply(200, withId(apps ? this.appsListHead : this.listHead, JSON.stringify(id)));
    }
    if (msg.method !== 'tools/call' || !params || typeof params.name !== 'string') return undefined;
    const args = params.arguments;
    if (args !== undefined && !isObject(args)) return undefined;
    if ('task' in params) return undefined;
    const tool = this.registry.get(params.name);
    if (!tool) return undefined;
    const answer = (out: CallOutcome) => reply(200, `{"result":${callResultJson(out, '', '', requestId)},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`, out.headers);
    const out = this.calls.invoke(caller, tool, args ?? {}, { signal, progress: undefined, onHeaders: undefined, era: 'legacy' });
    return out instanceof Promise ? out.then(answer) : answer(out);
  }
}
