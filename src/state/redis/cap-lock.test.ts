import { describe, expect, it } from 'vitest';
import { replicasIn } from './cap-lock.js';

// CLUSTER NODES as a master of a 3+3 cluster prints it (Redis 7.0), seen from 30355.
const NODES = [
  '7ddb824cf0acf9984f7ed46e6294a3d2eb0ec09e 127.0.0.1:45786@55786 slave efba0839cabb1dbbd07b1b8cb79f505df2c3835e 0 1795746176403 2 connected',
  'efba0839cabb1dbbd07b1b8cb79f505df2c3835e 127.0.0.1:28766@38766 master - 0 1795746176102 2 connected 5461-10922',
  '5836c1c693a3b19ef37ac0d7aca70ce266489664 127.0.0.1:35283@45283 slave 3294df7dabf94f234c3dee5949ffa1b774c42167 0 1795746176105 3 connected',
  '3294df7dabf94f234c3dee5949ffa1b774c42167 127.0.0.1:30355@40355 myself,master - 0 1795746176000 3 connected 10923-16383',
  '62c57bd4a27d4c5228587da31af2176391cc0db6 127.0.0.1:38570@48570 master - 0 1795746176000 1 connected 0-5460',
].join('\n');

describe('replicasIn: the replicas a master has by its own CLUSTER NODES', () => {
  it('counts the replicas of the node flagged myself, not those of other masters', () => {
    expect(replicasIn(NODES)).toBe(1);
    expect(replicasIn(NODES.replace('myself,master', 'master').replace('62c57bd4a27d4c5228587da31af2176391cc0db6 127.0.0.1:38570@48570 master', '62c57bd4a27d4c5228587da31af2176391cc0db6 127.0.0.1:38570@48570 myself,master'))).toBe(0);
  });

  it('leaves out a replica marked failed, keeps one only suspected (fail?): it may still be promoted', () => {
    expect(replicasIn(NODES.replace('5836c1c693a3b19ef37ac0d7aca70ce266489664 127.0.0.1:35283@45283 slave', '5836c1c693a3b19ef37ac0d7aca70ce266489664 127.0.0.1:35283@45283 slave,fail'))).toBe(0);
    expect(replicasIn(NODES.replace('5836c1c693a3b19ef37ac0d7aca70ce266489664 127.0.0.1:35283@45283 slave', '5836c1c693a3b19ef37ac0d7aca70ce266489664 127.0.0.1:35283@45283 slave,fail?'))).toBe(1);
    expect(replicasIn(`${NODES}\n`)).toBe(1);
  });
});
