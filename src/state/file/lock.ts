import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import lockfile from 'proper-lockfile';
import { StoreError } from '../types.js';

/** The lock directory (mkdir is atomic) and the file naming its owner, inside DATA_DIR. */
export const LOCK_NAME = '.devtoolbox.lock';
export const OWNER_NAME = '.devtoolbox.owner.json';

interface Owner {
  pid: number;
  host: string;
  purpose: string;
  since: string;
  /** mtime of the lock directory this owner created: ties the owner file to that lock. */
  lockMtimeMs: number;
  /** The owner's start time in clock ticks since boot (/proc/<pid>/stat), to tell a reused pid apart. */
  startTicks?: string;
}

/** Data dirs this process holds (a second open in the same process is refused too). */
const held = new Set<string>();

/** State and start time of a process from /proc/<pid>/stat, or undefined without /proc. */
function procStat(pid: number): { state: string; startTicks: string } | 'gone' | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return undefined;
    return fs.existsSync('/proc/self/stat') ? 'gone' : undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', startTicks: fields[19] ?? '' };
}

/**
 * Whether the owner still runs. A killed process stays a zombie (state Z) until its parent
 * reaps it — seconds, under a supervisor that is busy restarting it — and `kill(pid, 0)` still
 * succeeds on a zombie: that refused restarts right after a kill -9. A pid that now belongs to
 * another process (other start time) is dead too.
 */
function alive(owner: Owner): boolean {
  const stat = procStat(owner.pid);
  if (stat === 'gone') return false;
  if (stat) {
    if (stat.state === 'Z' || stat.state === 'X' || stat.state === 'x') return false;
    return owner.startTicks === undefined || owner.startTicks === stat.startTicks;
  }
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readOwner(dir: string): Owner | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(path.join(dir, OWNER_NAME), 'utf8')) as Owner;
    return typeof o.pid === 'number' && typeof o.host === 'string' ? o : undefined;
  } catch {
    return undefined;
  }
}

function lockedError(dir: string, owner: Owner | undefined): StoreError {
  const who = owner ? ` (pid ${owner.pid} on ${owner.host}, ${owner.purpose}, since ${owner.since})` : '';
  return new StoreError(
    'LOCKED',
    `another devtoolbox process${who} owns DATA_DIR ${dir}: one process per data dir. Stop it first` +
      ` (or, if no such process runs, remove ${path.join(dir, LOCK_NAME)}).`,
  );
}

/**
 * Takes the data dir for this process. A lock left by a process that died (kill -9, power
 * loss) on this host is taken over at once: its owner file names a pid that no longer runs,
 * is a zombie, or now belongs to another process.
 * A lock whose owner cannot be checked (another host, no owner file) is respected.
 */
export async function lockDataDir(dir: string, purpose: string): Promise<() => Promise<void>> {
  if (held.has(dir)) throw lockedError(dir, readOwner(dir));
  const lockPath = path.join(dir, LOCK_NAME);
  // The mtime of the lock is never refreshed (staleness is decided by the owner's pid), so
  // the owner file's lockMtimeMs keeps identifying the lock it belongs to.
  const opts = { lockfilePath: lockPath, realpath: false, stale: 2_000_000_000, update: 1_000_000_000 };
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dir, opts);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
    const owner = readOwner(dir);
    let lockMtime: number | undefined;
    try {
      lockMtime = fs.statSync(lockPath).mtimeMs;
    } catch {
      lockMtime = undefined;
    }
    const stale =
      owner !== undefined &&
      owner.host === os.hostname() &&
      owner.lockMtimeMs === lockMtime &&
      (owner.pid === process.pid || !alive(owner));
    if (!stale) throw lockedError(dir, owner);
    // Move the dead owner's lock out of the way (rename is atomic), then take it as usual.
    const aside = `${lockPath}.stale-${process.pid}-${Date.now()}`;
    try {
      fs.renameSync(lockPath, aside);
      fs.rmSync(aside, { recursive: true, force: true });
    } catch {
      /* someone else moved it first: the lock() below decides */
    }
    try {
      release = await lockfile.lock(dir, opts);
    } catch (err2) {
      if ((err2 as NodeJS.ErrnoException).code === 'ELOCKED') throw lockedError(dir, readOwner(dir));
      throw err2;
    }
  }
  held.add(dir);
  const owner: Owner = {
    pid: process.pid,
    host: os.hostname(),
    purpose,
    since: new Date().toISOString(),
    lockMtimeMs: fs.statSync(lockPath).mtimeMs,
  };
  const self = procStat(process.pid);
  if (self && self !== 'gone') owner.startTicks = self.startTicks;
  const ownerPath = path.join(dir, OWNER_NAME);
  const tmp = `${ownerPath}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(owner) + '\n');
  fs.renameSync(tmp, ownerPath);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    held.delete(dir);
    try {
      fs.rmSync(ownerPath, { force: true });
    } finally {
      await release().catch(() => {});
    }
  };
}
