import { describe, expect, it } from 'vitest';
import { joinHeaders } from './join-headers.js';

describe('joinHeaders', () => {
  it('is { ...base, ...extra }: same members, same order, the later value wins', () => {
    const base = { 'Content-Type': 'application/json', 'X-A': '1' };
    const extra = { 'RateLimit-Limit': '10', 'X-A': '2', RateLimit: '"minute";r=9;t=60' };
    const joined = joinHeaders(base, extra);
    expect(joined).toEqual({ ...base, ...extra });
    expect(Object.keys(joined)).toEqual(Object.keys({ ...base, ...extra }));
    expect(JSON.stringify(joined)).toBe(JSON.stringify({ ...base, ...extra }));
  });

  it('copies: neither argument is changed', () => {
    const base = { a: '1' };
    const extra = { b: '2' };
    joinHeaders(base, extra).c = '3';
    expect(base).toEqual({ a: '1' });
    expect(extra).toEqual({ b: '2' });
  });
});
