import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/harness.js';
import { createLogger } from '../../log.js';
import { openFileStore, type Store } from '../index.js';

const INDEX_TS = fileURLToPath(new URL('../index.ts', import.meta.url));
const log = createLogger('silent');
const cleanup: Array<() => void> = [];
afterEach(() => {
  for (const f of cleanup.splice(0)) f();
});

function processState(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  } catch {
    return undefined;
  }
}

describe('data dir lock', () => {
  // Issue 16: 2 of 5 restarts within 1-4 s of a kill -9 were refused ("another process owns
  // DATA_DIR") because the killed owner was still a zombie, and kill(pid, 0) succeeds on one.
  it('a restart right after kill -9 starts while the killed owner is still an unreaped zombie', async () => {
    const dir = tempDir();
    const script = path.join(dir, '..', `${path.basename(dir)}-owner.mts`);
    fs.writeFileSync(
      script,
      `import { openFileStore } from ${JSON.stringify(INDEX_TS)};
       const log = { debug() {}, info() {}, warn() {}, error() {} };
       await openFileStore(process.argv[2], { log });
       console.log('OWNER ' + process.pid);
       setInterval(() => {}, 1000);`,
    );
    // The owner runs under a parent that never reaps it (sh execs into sleep), like a
    // supervisor that has not yet collected its dead child: killed, it stays a zombie.
    const parent = spawn('sh', ['-c', `"${process.execPath}" --import tsx "${script}" "${dir}" & exec sleep 60`], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.push(() => {
      parent.kill('SIGKILL');
      fs.rmSync(script, { force: true });
    });
    const ownerPid = await new Promise<number>((resolve, reject) => {
      let out = '';
      parent.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /OWNER (\d+)/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      parent.on('exit', () => reject(new Error(`owner did not start: ${out}`)));
    });
    process.kill(ownerPid, 'SIGKILL');
    for (let i = 0; i < 100 && processState(ownerPid) !== 'Z'; i++) await new Promise((r) => setTimeout(r, 50));
    expect(processState(ownerPid)).toBe('Z');
    let store: Store | undefined;
    try {
      store = await openFileStore(dir, { log });
      expect(store.ready).toBe(true);
    } finally {
      await store?.close();
    }
  }, 30_000);

  it('a pid that now belongs to another process does not keep a dead owner\'s lock', async () => {
    const dir = tempDir();
    const first = await openFileStore(dir, { log });
    const ownerFile = path.join(dir, '.devtoolbox.owner.json');
    const owner = JSON.parse(fs.readFileSync(ownerFile, 'utf8')) as { pid: number; startTicks?: string };
    expect(owner.startTicks).toMatch(/^\d+$/);
    // Pretend the lock was left by an earlier process whose pid this (live) process reuses.
    const lock = path.join(dir, '.devtoolbox.lock');
    const mtime = fs.statSync(lock).mtime;
    await first.close();
    fs.mkdirSync(lock);
    fs.utimesSync(lock, mtime, mtime);
    const parentPid = process.ppid;
    fs.writeFileSync(ownerFile, JSON.stringify({ ...owner, pid: parentPid, startTicks: '1', lockMtimeMs: fs.statSync(lock).mtimeMs }));
    const second = await openFileStore(dir, { log });
    await second.close();
  });
});
