import fs from 'node:fs';
import path from 'node:path';

/** Where a serving process records its address, so `devtoolbox keys` can find it. */
export const SERVER_RECORD = '.devtoolbox.server.json';

export interface ServerRecord {
  url: string;
  pid: number;
}

/** Records (or, with null, removes) the address of the server that owns `dataDir`. Best effort. */
export function writeServerRecord(dataDir: string, record: ServerRecord | null): void {
  const file = path.join(dataDir, SERVER_RECORD);
  try {
    if (record === null) fs.rmSync(file, { force: true });
    else fs.writeFileSync(file, JSON.stringify(record) + '\n', { mode: 0o600 });
  } catch {
    // The address is a convenience for the CLI; DEVTOOLBOX_URL does the same.
  }
}

/** The recorded server of `dataDir` while its process lives, else null. */
export function readServerRecord(dataDir: string): ServerRecord | null {
  try {
    const r = JSON.parse(fs.readFileSync(path.join(dataDir, SERVER_RECORD), 'utf8')) as Partial<ServerRecord>;
    if (typeof r.url !== 'string' || typeof r.pid !== 'number') return null;
    process.kill(r.pid, 0);
    return { url: r.url, pid: r.pid };
  } catch {
    return null;
  }
}
