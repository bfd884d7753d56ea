import { describe, expect, it } from 'vitest';
import { ToolError } from '../errors.js';
import { JobGate } from './shared.js';

describe('JobGate', () => {
  it('runs at most `max` jobs at once, queues the rest in order, refuses past the queue', async () => {
    const gate = new JobGate(2, 2, 'jobs');
    const release: Array<() => void> = [];
    let active = 0;
    let peak = 0;
    const order: number[] = [];
    const job = (n: number) => () =>
      new Promise<number>((resolve) => {
        active++;
        peak = Math.max(peak, active);
        order.push(n);
        release.push(() => {
          active--;
          resolve(n);
        });
      });
    const runs = [1, 2, 3, 4].map((n) => gate.run(job(n)));
    await new Promise((r) => setImmediate(r));
    expect(gate.load).toStrictEqual({ running: 2, waiting: 2 });
    const refused = await gate.run(job(5)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ToolError);
    expect((refused as ToolError).code).toBe('RATE_LIMITED');
    expect((refused as ToolError).headers).toStrictEqual({ 'Retry-After': '1' });
    while (release.length) {
      release.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    expect(await Promise.all(runs)).toStrictEqual([1, 2, 3, 4]);
    expect(order).toStrictEqual([1, 2, 3, 4]);
    expect(peak).toBe(2);
    expect(gate.load).toStrictEqual({ running: 0, waiting: 0 });
  });

  it('frees the slot when a job throws', async () => {
    const gate = new JobGate(1, 0, 'jobs');
    await expect(gate.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await gate.run(async () => 7)).toBe(7);
    expect(gate.load).toStrictEqual({ running: 0, waiting: 0 });
  });
});
