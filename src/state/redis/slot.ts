/**
 * Redis Cluster's key slot: CRC16 (XMODEM) of the key's hash tag, mod 16384 (the cluster
 * specification, "Keys distribution model").
 */

const TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** CRC16/XMODEM of the UTF-8 bytes of `s`. */
export function crc16(s: string): number {
  let crc = 0;
  for (const b of Buffer.from(s, 'utf8')) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ b) & 0xff]!;
  return crc;
}

/** The slot of `key`: only the part inside the first non-empty `{…}` counts, when there is one. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open !== -1) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(key) % 16384;
}
