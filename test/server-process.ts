/**
 * The real server as a child process (`node --import tsx src/main.ts serve`), for crash, admin
 * and multi-instance tests. The in-process harness is test/harness.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:43211 */
  base: string;
  /** Sends `signal` (SIGKILL: a crash) and resolves, once the process has exited, with the signal that ended it. */
  stop(signal?: NodeJS.Signals): Promise<NodeJS.Signals | null>;
}

/** Server processes started and not yet exited, so a failed test cannot leave one behind. */
const running = new Set<ChildProcess>();

/** Kills (SIGKILL) every server process still running: for an afterAll. */
export function killServerProcesses(): void {
  for (const c of running) c.kill('SIGKILL');
  running.clear();
}

/**
 * Starts `devtoolbox serve` with `env` on top of this process's environment (PORT defaults to 0,
 * a free port); resolves once it logs its address, rejects if it exits first.
 */
export function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts', 'serve'], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  running.add(child);
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.once('exit', (_code, signal) => {
      running.delete(child);
      resolve(signal);
    }),
  );
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on (http:\/\/[^\s]+?:\d+)/.exec(err);
      if (m) resolve({ child, base: m[1]!, stop });
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
}
