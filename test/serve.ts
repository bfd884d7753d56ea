/** The real server as a child process (`node --import tsx src/main.ts serve`), for crash, admin and multi-instance tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  /** e.g. http://127.0.0.1:43211 */
  base: string;
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
  return new Promise((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /listening on (http:\/\/[^\s]+?:\d+)/.exec(err);
      if (m) resolve({ child, base: m[1]! });
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
}
