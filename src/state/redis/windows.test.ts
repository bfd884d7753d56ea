/**
 * Issue 37: while a limit script is in flight, the next turns' calls wait for its reply (at most
 * the hold) and go as ONE script call — checked here against a scripted runner, so "in flight"
 * and "answered" are under the test's control. Exactness on real Redis: test/redis-limiter-batch.test.ts.
 */
import { describe, expect, it } from 'vitest';
import type { ScriptedRedis } from './scripts.js';
import { RedisWindows, type ScriptRunner } from './windows.js';

interface Sent {
  calls: number;
  reply: (r: [number, string, number, number, string, string]) => void;
  fail: (err: unknown) => void;
}

/** The batch size of a limit script call: its last argument. */
const callsOf = (args: string[]) => Number(args[args.length - 1]);

/**
 * A runner whose limit script calls are recorded and answered by the test; an explicit pipeline
 * (several subjects at once) records its calls' batch sizes and answers each at once.
 */
function scripted(): { runner: ScriptRunner; sent: Sent[]; pipelines: number[][] } {
  const sent: Sent[] = [];
  const pipelines: number[][] = [];
  const client = {
    dtbRate: (_n: number, ...args: string[]) =>
      new Promise((resolve, reject) => {
        sent.push({ calls: callsOf(args), reply: resolve, fail: reject });
      }),
    pipeline: () => {
      const batch: number[] = [];
      pipelines.push(batch);
      const p = {
        dtbRate: (_n: number, ...args: string[]) => (batch.push(callsOf(args)), p),
        exec: async () => batch.map((n) => [null, [n, '9', 0, 0, '9', '9']]),
      };
      return p;
    },
  } as unknown as ScriptedRedis;
  return { runner: { key: (...parts) => parts.join(':'), run: (_what, fn) => fn(client) }, sent, pipelines };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 5000 && !cond(); i++) await new Promise((r) => setTimeout(r, 1));
  expect(cond()).toBe(true);
}

describe('RedisWindows holds the next batch while a script is in flight', () => {
  it('calls of later turns wait for the reply and go as one script, answered in order', async () => {
    const { runner, sent } = scripted();
    const w = new RedisWindows(runner, 60_000);
    const first = w.rate('s', 100, 1000, true);
    await turn();
    await turn();
    expect(sent.map((s) => s.calls)).toEqual([1]);
    // Two more turns of calls while the first script is out: nothing is sent.
    const later = [w.rate('s', 100, 1000, true), w.rate('s', 100, 1000, true)];
    await turn();
    later.push(w.rate('s', 100, 1000, true));
    await turn();
    await turn();
    expect(sent.map((s) => s.calls)).toEqual([1]);
    sent[0]!.reply([1, '1000', 0, 0, '1000', '1000']);
    expect((await first).minuteUsed).toBe(1);
    await until(() => sent.length === 2);
    // The three held calls: one script call.
    expect(sent.map((s) => s.calls)).toEqual([1, 3]);
    sent[1]!.reply([3, '1001', 1, 1, '1000', '1000']);
    expect((await Promise.all(later)).map((s) => [s.allowed, s.minuteUsed, s.dayUsed])).toEqual([
      [true, 2, 2],
      [true, 3, 3],
      [true, 4, 4],
    ]);
  });

  it("the caller's then is applied before settling: its value resolves, its throw rejects that call only", async () => {
    const { runner, sent } = scripted();
    const w = new RedisWindows(runner, 60_000);
    const calls = [0, 1, 2].map((i) =>
      w.rate('s', 2, 1000, true, (s) => {
        if (!s.allowed) throw new Error(`refused ${i}`);
        return s.minuteUsed * 10;
      }),
    );
    await turn();
    await turn();
    sent[0]!.reply([2, '1', 0, 0, '1', '1']);
    expect(await calls[0]).toBe(10);
    expect(await calls[1]).toBe(20);
    await expect(calls[2]).rejects.toThrow('refused 2');
  });

  it('a reply that never comes holds the next batch no longer than the hold', async () => {
    const { runner, sent } = scripted();
    const w = new RedisWindows(runner, 20);
    void w.rate('s', 100, 1000, true).catch(() => {});
    await turn();
    await turn();
    const second = w.rate('s', 100, 1000, true);
    // The first is never answered; the second goes once the hold is over.
    await until(() => sent.length === 2);
    sent[1]!.reply([1, '5', 0, 0, '5', '5']);
    expect((await second).allowed).toBe(true);
    sent[0]!.fail(new Error('gone'));
  });

  it('a failed script releases the held calls too', async () => {
    const { runner, sent } = scripted();
    const w = new RedisWindows(runner, 60_000);
    const first = w.rate('s', 100, 1000, true);
    await turn();
    await turn();
    const second = w.rate('s', 100, 1000, true);
    await turn();
    await turn();
    expect(sent.length).toBe(1);
    sent[0]!.fail(new Error('connection lost'));
    await expect(first).rejects.toThrow('connection lost');
    await until(() => sent.length === 2);
    sent[1]!.reply([1, '7', 0, 0, '7', '7']);
    expect((await second).minuteUsed).toBe(1);
  });

  it('several subjects held together go as one pipeline after the reply', async () => {
    const { runner, sent, pipelines } = scripted();
    const w = new RedisWindows(runner, 60_000);
    const first = w.rate('a', 100, 1000, true);
    await turn();
    await turn();
    const held = [w.rate('a', 100, 1000, true), w.rate('b', 100, 1000, true), w.rate('b', 100, 1000, true)];
    await turn();
    await turn();
    expect(pipelines).toEqual([]);
    sent[0]!.reply([1, '8', 0, 0, '8', '8']);
    await first;
    const answers = await Promise.all(held);
    expect(pipelines).toEqual([[1, 2]]);
    expect(answers.map((a) => a.minuteUsed)).toEqual([1, 1, 2]);
  });
});

describe('RedisWindows and key generations (issue 37)', () => {
  /** A runner that records each limit script call's keys and arguments, answered by the test. */
  function recording() {
    const seen: string[][] = [];
    const answers: Array<(r: unknown) => void> = [];
    const piped: string[][] = [];
    const client = {
      dtbRate: (n: number, ...args: string[]) =>
        new Promise((resolve) => {
          seen.push([String(n), ...args]);
          answers.push(resolve);
        }),
      pipeline: () => {
        const p = {
          dtbRate: (n: number, ...args: string[]) => (piped.push([String(n), ...args]), p),
          exec: async () => piped.map((a) => [null, a.length === 9 ? [-1, '7'] : [Number(a[a.length - 1]), '9', 0, 0, '9', '9']]),
        };
        return p;
      },
    } as unknown as ScriptedRedis;
    const runner: ScriptRunner = { key: (...parts) => parts.join(':'), run: (_what, fn) => fn(client) };
    return { w: new RedisWindows(runner, 60_000), seen, answers, piped };
  }

  it('calls under a generation name it to the script (its key in the subject’s slot); a stale answer reaches every call of the batch and nothing is decided', async () => {
    const { w, seen, answers } = recording();
    const calls = [w.rate('key:k1', 10, 100, true, undefined, '3'), w.rate('key:k1', 10, 100, true, (s) => s.stale, '3')];
    await turn();
    expect(seen).toStrictEqual([['4', 'rl:key:k1:mw', 'rl:key:k1:d', 'rl:key:k1:m', 'rl:key:k1:gen', '10', '100', '2', '3']]);
    answers[0]!([-1, '4']);
    const [first, second] = await Promise.all(calls);
    expect(first).toStrictEqual({ allowed: false, now: 0, minuteUsed: 0, first: 0, oldestCounted: 0, dayUsed: 0, stale: '4' });
    expect(second).toBe('4');
  });

  it('calls of one subject under different generations, or none, in one turn are separate batches', async () => {
    const { w, seen, piped } = recording();
    const calls = [
      w.rate('key:k1', 10, 100, true, undefined, '3'),
      w.rate('key:k1', 10, 100, true, undefined, '4'),
      w.rate('key:k1', 10, 100, true),
      w.rate('key:k1', 10, 100, true, undefined, '3'),
    ];
    await turn();
    expect(seen).toStrictEqual([]);
    expect(piped).toStrictEqual([
      ['4', 'rl:key:k1:mw', 'rl:key:k1:d', 'rl:key:k1:m', 'rl:key:k1:gen', '10', '100', '2', '3'],
      ['4', 'rl:key:k1:mw', 'rl:key:k1:d', 'rl:key:k1:m', 'rl:key:k1:gen', '10', '100', '1', '4'],
      ['3', 'rl:key:k1:mw', 'rl:key:k1:d', 'rl:key:k1:m', '10', '100', '1'],
    ]);
    expect((await Promise.all(calls)).map((s) => s.stale)).toStrictEqual(['7', '7', undefined, '7']);
  });
});
