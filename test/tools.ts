/**
 * Calls any tool through the one call path (CallPath: limits, validation in and out, handler,
 * error mapping) on real services — a memory store unless `disk: true` — for the tool tests
 * beside each family. Transport tests use test/harness.ts instead.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { CallPath, type ProgressFn } from '../src/core/call.js';
import { ToolError } from '../src/errors.js';
import type { AnyTool, Caller, RichResult } from '../src/registry.js';
import { closeServices, type Clock, type ServiceOverrides, type Services } from '../src/services.js';
import { createMemoryStore } from '../src/state/index.js';
import { testServices } from './context.js';

export interface CallOptions {
  caller?: Partial<Caller>;
  progress?: ProgressFn;
  signal?: AbortSignal;
}

/** What a failed call answered: the status of its code, and the contract's error object. */
export interface Failure {
  status: number;
  code: string;
  message: string;
  details?: unknown;
}

export interface ToolHarness {
  readonly services: Services;
  /** The whole result (json, and a binary body or extra MCP content when the tool gives them). Throws the ToolError of a failed call. */
  run(tool: AnyTool, input: unknown, opts?: CallOptions): Promise<RichResult<Record<string, unknown>>>;
  /** The JSON result. Throws the ToolError of a failed call. */
  call(tool: AnyTool, input: unknown, opts?: CallOptions): Promise<Record<string, unknown>>;
  /** The error of a call that must fail; throws when it succeeds. */
  failure(tool: AnyTool, input: unknown, opts?: CallOptions): Promise<Failure>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** true: the file store on a temp DATA_DIR (default: the memory store). */
  disk?: boolean;
  overrides?: ServiceOverrides;
}

const CALLER: Caller = { keyId: null, ip: '127.0.0.1', transport: 'memory' };

/** Real services and a call path over them. Close it when done. */
export async function toolHarness(opts: HarnessOptions = {}): Promise<ToolHarness> {
  const services = await testServices(opts.env, {
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.disk ? {} : { store: createMemoryStore() }),
    ...opts.overrides,
  });
  const calls = new CallPath(services);
  const run = async (tool: AnyTool, input: unknown, o: CallOptions = {}) => {
    const out = await calls.call({ ...CALLER, ...o.caller }, tool, input, { progress: o.progress, signal: o.signal });
    if (!out.ok) throw out.error;
    return out.value;
  };
  return {
    services,
    run,
    call: async (tool, input, o) => (await run(tool, input, o)).json,
    async failure(tool, input, o = {}) {
      const out = await calls.call({ ...CALLER, ...o.caller }, tool, input, { progress: o.progress, signal: o.signal });
      if (out.ok) throw new Error(`expected ${tool.name} to fail on ${JSON.stringify(input)?.slice(0, 200)}`);
      const e: ToolError = out.error;
      // The check the copied set-ups each made: a failure is always a ToolError, never anything else.
      expect(e).toBeInstanceOf(ToolError);
      return { status: e.status, ...e.toJSON() };
    },
    close: () => closeServices(services),
  };
}

/**
 * A harness for a whole test file or describe block: created in beforeAll, closed in afterAll.
 * Use its methods inside tests (not at collection time).
 */
export function useToolHarness(opts: HarnessOptions = {}): ToolHarness {
  let h: ToolHarness | undefined;
  beforeAll(async () => {
    h = await toolHarness(opts);
  });
  afterAll(async () => {
    await h?.close();
  });
  const get = (): ToolHarness => {
    if (!h) throw new Error('useToolHarness: use it inside a test, after beforeAll');
    return h;
  };
  return {
    get services() {
      return get().services;
    },
    run: (...a) => get().run(...a),
    call: (...a) => get().call(...a),
    failure: (...a) => get().failure(...a),
    close: () => get().close(),
  };
}
