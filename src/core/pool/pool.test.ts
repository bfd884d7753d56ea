import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../config.js';
import { ToolError } from '../../errors.js';
import { invokeTool } from '../../invoke.js';
import type { Logger } from '../../log.js';
import { isRichResult, type AnyTool, type ToolContext } from '../../registry.js';
import type { Services } from '../../services.js';
import { allTools } from '../../tools/index.js';
import { createToolPool, type ToolPool, type ToolPoolOptions } from './pool.js';
import { poolRunner } from './runner.js';

const config = loadConfig({ LOG_LEVEL: 'silent', PUBLIC_BASE_URL: 'http://pool.test' });
const FIXTURES = new URL('../../../test/fixtures/pool-tools.ts', import.meta.url);

/** A logger that keeps its lines, to check what the workers forward. */
function recordingLog(): Logger & { lines: Array<{ level: string; msg: string; extra?: unknown }> } {
  const lines: Array<{ level: string; msg: string; extra?: unknown }> = [];
  const at = (level: string) => (msg: string, extra?: unknown) => void lines.push({ level, msg, extra });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

function pool(opts: Partial<ToolPoolOptions> = {}): ToolPool {
  return createToolPool({ size: 1, maxQueue: 4, deadlineMs: 20_000, maxOldGenerationSizeMb: 256, config, log: recordingLog(), toolsModule: FIXTURES, ...opts });
}

/** The inline answer, for comparison: invokeTool() with the context a pure tool needs. */
async function inline(name: string, input: unknown): Promise<unknown> {
  const tool = allTools.find((t) => t.name === name) as AnyTool;
  const ctx: ToolContext = {
    caller: { keyId: null, ip: 'local', transport: 'memory' },
    services: { config, log: recordingLog() } as unknown as Services,
    progress: async () => {},
    signal: new AbortController().signal,
  };
  return outcome(invokeTool(tool, input, ctx));
}

/** A result or the whole ToolError, as comparable data. */
async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    const r = await p;
    return { ok: true, rich: isRichResult(r), value: r };
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    return { ok: false, error: { class: err.constructor.name, code: err.code, message: err.message, details: err.details, headers: err.headers } };
  }
}

async function failure(p: Promise<unknown>): Promise<ToolError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ToolError);
    return err as ToolError;
  }
  throw new Error('expected a failure');
}

/** 1 MB of nested flow YAML that expands to ~259 MB of JSON (issue 16). */
const HOSTILE_YAML = '['.repeat(255) + '1,'.repeat(499_700) + ']'.repeat(255);

describe('the worker entry', () => {
  it('loads the default tool list from the TypeScript sources', async () => {
    const p = createToolPool({ size: 1, maxQueue: 0, deadlineMs: 20_000, maxOldGenerationSizeMb: 256, config, log: recordingLog() });
    try {
      expect(await outcome(p.run('json_yaml_convert', { input: '{"a":[1]}' }))).toStrictEqual(await inline('json_yaml_convert', { input: '{"a":[1]}' }));
    } finally {
      await p.close();
    }
  });
});

describe('start-up', () => {
  it('startAfter: no worker before it settles; then the pool fills. A job before it starts one at once', async () => {
    let settle!: () => void;
    const gate = new Promise<void>((r) => (settle = r));
    const p = pool({ startAfter: gate });
    try {
      expect(p.stats).toStrictEqual({ size: 1, busy: 0, queued: 0, starting: 0 });
      settle();
      await gate;
      expect(p.stats.starting).toBe(1);
    } finally {
      await p.close();
    }
    const early = pool({ startAfter: new Promise(() => {}) }); // never settles: the first job starts the worker
    try {
      expect(early.stats.starting).toBe(0);
      expect(await outcome(early.run('json_yaml_convert', { input: '{"a":1}' }))).toStrictEqual(await inline('json_yaml_convert', { input: '{"a":1}' }));
    } finally {
      await early.close();
    }
  });
});

describe('a pooled call answers what invokeTool answers', () => {
  let p: ToolPool;
  beforeAll(() => {
    p = pool({ size: 2 });
  });
  afterAll(() => p.close());

  const cases: Array<[string, unknown]> = [
    ['json_yaml_convert', { input: '{"a":[1,{"b":null}],"s":"x: y"}' }],
    ['json_yaml_convert', { input: 'a: 1\n---\nb: [x, y]\n', indent: 4 }],
    ['json_yaml_convert', { input: '{\n  "a": 1\n  "b": 2\n}', direction: 'json2yaml' }],
    ['json_yaml_convert', { input: 'a: 1\na: 2\n' }],
    ['json_yaml_convert', { input: 42 }],
    ['json_yaml_convert', 'not an object'],
    ['xml_format', { input: '<note><to>Ada</to><!-- hi --><body><![CDATA[a < b]]></body></note>' }],
    ['xml_format', { input: '<a><b></a>', action: 'validate' }],
    ['xml_format', { input: '<a><b></a>' }],
    ['xml_format', { input: '<a>  <b> x </b> </a>', action: 'minify' }],
    ['sql_format', { input: "select id, name from users where status = 'active' order by name", dialect: 'postgresql' }],
    ['sql_format', { input: 'select a from t -- c\nwhere b=1', action: 'minify' }],
    ['sql_format', { input: 'select (((1', action: 'beautify' }],
    ['sql_format', { input: 'select 1', dialect: 'oracle' }],
    ['file_process', { action: 'parse', content: 'name,age,zip\nAda,36,02134\nLinus,,94105\n' }],
    ['file_process', { action: 'analyze', content: 'a;b\n1;x\n2;y\n3;x\n' }],
    ['file_process', { action: 'convert', content: '[{"__proto__":1,"b":"<&>"}]', to: 'xml' }],
    ['file_process', { action: 'parse', content: '__proto__,b\n1,2\n' }],
    ['file_process', { action: 'generate', data: [{ a: 1, b: null }, { c: true }], format: 'tsv' }],
    ['file_process', { action: 'convert', content: 'a,b\n1,2\n' }],
    ['file_process', { action: 'parse', content: '<rows><row><a>1</a></row>' }],
  ];

  it.each(cases)('%s %j', async (name, input) => {
    const pooled = await outcome(p.run(name, input));
    expect(pooled).toStrictEqual(await inline(name, input));
  });

  it('keeps a ToolError whole: class, code, message, details, headers', async () => {
    const e = await failure(p.run('fixture_tool_error', {}));
    expect([e.code, e.message, e.details, e.headers]).toStrictEqual(['CONFLICT', 'taken', { field: 'code', tried: [1, 2] }, { 'Retry-After': '7' }]);
  });

  it('brings a RichResult back with its body and content', async () => {
    const r = await p.run('fixture_rich', { text: 'héllo' });
    expect(isRichResult(r)).toBe(true);
    expect(r.json).toStrictEqual({ length: 5 });
    expect(r.body?.contentType).toBe('text/plain');
    expect(r.body?.headers).toStrictEqual({ 'X-Fixture': '1' });
    expect(Buffer.from(r.body!.data).toString()).toBe('héllo');
    expect(r.content).toStrictEqual([{ type: 'text', text: 'héllo' }]);
  });

  it('turns other errors into INTERNAL and logs their cause on the main thread', async () => {
    const log = recordingLog();
    const q = pool({ log });
    try {
      const e = await failure(q.run('fixture_crash', {}));
      expect(e.toJSON()).toStrictEqual({ code: 'INTERNAL', message: 'Internal error' });
      const line = log.lines.find((l) => l.level === 'error');
      expect(line?.msg).toBe('internal error in fixture_crash');
      expect(line?.extra).toBeInstanceOf(Error);
      expect((line?.extra as Error).message).toBe('secret internals');

      expect((await failure(q.run('fixture_bad_output', {}))).code).toBe('INTERNAL');
      expect(log.lines.some((l) => l.msg === 'output of fixture_bad_output does not match its schema')).toBe(true);

      // Pooled tools get config, clock and log only; reaching for the store is a bug, reported as one.
      expect((await failure(q.run('fixture_store', {}))).code).toBe('INTERNAL');
      expect(log.lines.some((l) => String((l.extra as Error | undefined)?.message).includes('services.store is not available'))).toBe(true);

      expect((await failure(q.run('no_such_tool', {}))).code).toBe('INTERNAL');
    } finally {
      await q.close();
    }
  });

  it('forwards progress and log lines, and passes the caller and config', async () => {
    const log = recordingLog();
    const q = pool({ log });
    try {
      const progress: unknown[] = [];
      await q.run('fixture_talk', {}, { onProgress: (...a) => progress.push(a) });
      expect(progress).toStrictEqual([
        [1, 2, 'half'],
        [2, 2, undefined],
      ]);
      const line = log.lines.find((l) => l.msg === 'from the worker');
      expect(line?.level).toBe('warn');
      expect((line?.extra as Error).message).toBe('logged cause');
      const r = await q.run('fixture_caller', {}, { caller: { keyId: 'k1', ip: '10.0.0.1', transport: 'rest' } });
      expect(r.json).toStrictEqual({ keyId: 'k1', transport: 'rest', publicBaseUrl: 'http://pool.test' });
    } finally {
      await q.close();
    }
  });

  it("poolRunner gives the pool the call path's caller, progress and signal", async () => {
    const progress: unknown[] = [];
    const abort = new AbortController();
    const ctx: ToolContext = {
      caller: { keyId: 'k2', ip: '10.0.0.2', transport: 'mcp-http' },
      services: {} as Services,
      progress: async (...a) => void progress.push(a),
      signal: abort.signal,
    };
    const runner = poolRunner(p);
    const tool = (name: string) => ({ name }) as AnyTool;
    expect((await runner.run(tool('fixture_caller'), {}, ctx)).json).toStrictEqual({ keyId: 'k2', transport: 'mcp-http', publicBaseUrl: 'http://pool.test' });
    await runner.run(tool('fixture_talk'), {}, ctx);
    expect(progress).toStrictEqual([
      [1, 2, 'half'],
      [2, 2, undefined],
    ]);
    const spinning = outcome(runner.run(tool('fixture_spin'), { ms: 0 }, ctx));
    abort.abort();
    expect(await spinning).toMatchObject({ ok: false, error: { code: 'UPSTREAM_TIMEOUT', message: 'The request was cancelled' } });
  });

  it('a worker that dies mid-job fails that job with INTERNAL and is replaced', async () => {
    expect((await failure(p.run('fixture_exit', {}))).code).toBe('INTERNAL');
    expect((await p.run('json_yaml_convert', { input: '[1]' })).json).toStrictEqual({ result: '- 1\n', direction: 'json2yaml' });
  });
});

describe('isolation', () => {
  // A handler that never returns (the 12 s sql_format input of issue 16 is now refused by the
  // tool's own nesting budget in ≈ 0.3 s — on a loaded machine sometimes past a short deadline,
  // sometimes not — so it no longer makes a deterministic case for the deadline).
  it('terminates a job past its deadline (a handler that spins forever), answers 422, and keeps serving', async () => {
    const log = recordingLog();
    const p = pool({ log, deadlineMs: 500 });
    try {
      const e = await failure(p.run('fixture_spin', { ms: 0 }));
      expect(e.toJSON()).toStrictEqual({
        code: 'PARSE_ERROR',
        message: 'The input is too expensive to process within 0.5 s; send a smaller or simpler input',
        details: { reason: 'deadline', limitMs: 500 },
      });
      expect(p.stats.starting).toBe(1); // its replacement
      expect((await p.run('sql_format', { input: 'select 1' }, { deadlineMs: 20_000 })).json).toStrictEqual({ action: 'beautify', result: 'select\n  1' });
      expect(log.lines.map((l) => l.msg)).toContain('a pooled fixture_spin call passed its 500 ms deadline; its worker is terminated');
    } finally {
      await p.close();
    }
  });

  it('a job past the memory cap (1 MB of YAML → 259 MB of JSON) fails with 422; the process lives and the pool serves', async () => {
    const p = pool({ maxOldGenerationSizeMb: 64 });
    try {
      const e = await failure(p.run('json_yaml_convert', { input: HOSTILE_YAML, direction: 'yaml2json' }));
      expect(e.toJSON()).toStrictEqual({
        code: 'PARSE_ERROR',
        message: 'The input needs more memory than one call may use (64 MB); send a smaller or simpler input',
        details: { reason: 'memory', limitMb: 64 },
      });
      expect((await p.run('json_yaml_convert', { input: '[1]' })).json).toStrictEqual({ result: '- 1\n', direction: 'json2yaml' });
    } finally {
      await p.close();
    }
  });

  it('keeps the main event loop turning while a worker burns CPU', async () => {
    const p = pool();
    try {
      await p.run('json_yaml_convert', { input: '1' }); // started
      let ticks = 0;
      let spinning = true;
      const tick = (): void => {
        ticks++;
        if (spinning) setImmediate(tick);
      };
      setImmediate(tick);
      await p.run('fixture_spin', { ms: 1500 });
      spinning = false;
      // Inline, a 1.5 s synchronous handler allows no tick at all; here thousands happen.
      expect(ticks).toBeGreaterThan(100);
    } finally {
      await p.close();
    }
  });
});

describe('admission and cancellation', () => {
  it('refuses at once when every worker is busy and the queue is full; abort drops a queued job or ends a running one', async () => {
    const p = pool({ size: 1, maxQueue: 1 });
    try {
      await p.run('json_yaml_convert', { input: '1' }); // the worker is up
      const runningAbort = new AbortController();
      const running = outcome(p.run('fixture_spin', { ms: 0 }, { signal: runningAbort.signal }));
      const queuedAbort = new AbortController();
      const queued = outcome(p.run('json_yaml_convert', { input: '2' }, { signal: queuedAbort.signal }));
      expect(p.stats).toStrictEqual({ size: 1, busy: 1, queued: 1, starting: 0 });

      const refused = await failure(p.run('json_yaml_convert', { input: '3' }));
      expect([refused.code, refused.status, refused.headers]).toStrictEqual(['RATE_LIMITED', 429, { 'Retry-After': '1' }]);

      queuedAbort.abort();
      expect(await queued).toStrictEqual({
        ok: false,
        error: { class: 'ToolError', code: 'UPSTREAM_TIMEOUT', message: 'The request was cancelled', details: undefined, headers: undefined },
      });
      expect(p.stats.queued).toBe(0);

      // The spinning worker never answers on its own: only terminating it ends the job.
      runningAbort.abort(new ToolError('UPSTREAM_TIMEOUT', 'The call deadline passed'));
      expect(await running).toMatchObject({ ok: false, error: { code: 'UPSTREAM_TIMEOUT', message: 'The call deadline passed' } });
      expect(p.stats).toStrictEqual({ size: 1, busy: 0, queued: 0, starting: 1 });

      // A job sent while the replacement starts waits for it (a starting worker counts as a place).
      expect((await p.run('json_yaml_convert', { input: '4' })).json).toStrictEqual({ result: '4\n', direction: 'json2yaml' });
      expect(await outcome(p.run('json_yaml_convert', { input: '5' }, { signal: AbortSignal.abort() }))).toMatchObject({ ok: false, error: { code: 'UPSTREAM_TIMEOUT' } });
    } finally {
      await p.close();
    }
  });

  it('close() fails waiting and running jobs and refuses new ones', async () => {
    const p = pool({ size: 1, maxQueue: 2 });
    const running = outcome(p.run('fixture_spin', { ms: 0 }));
    const queued = outcome(p.run('json_yaml_convert', { input: '1' }));
    await p.close();
    const closed = { ok: false, error: { class: 'ToolError', code: 'RATE_LIMITED', message: 'The server is shutting down', details: undefined, headers: { 'Retry-After': '1' } } };
    expect(await running).toStrictEqual(closed);
    expect(await queued).toStrictEqual(closed);
    expect(await outcome(p.run('json_yaml_convert', { input: '1' }))).toStrictEqual(closed);
    expect(p.stats).toStrictEqual({ size: 1, busy: 0, queued: 0, starting: 0 });
  });
});
