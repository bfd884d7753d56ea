import { describe, expect, it } from 'vitest';
import { crc16, keySlot } from './slot.js';

describe('Redis Cluster key slot', () => {
  it('CRC16/XMODEM matches the cluster specification\'s check value', () => {
    // Redis Cluster specification, appendix A: the output for "123456789" is 0x31C3.
    expect(crc16('123456789')).toBe(0x31c3);
  });

  it('hashes only the first non-empty hash tag (the specification\'s examples)', () => {
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('foo{}{bar}')).toBe(crc16('foo{}{bar}') % 16384);
    expect(keySlot('foo{{bar}}zap')).toBe(crc16('{bar') % 16384);
    expect(keySlot('foo{bar}{zap}')).toBe(crc16('bar') % 16384);
    expect(keySlot('123456789')).toBe(0x31c3 % 16384);
  });
});
