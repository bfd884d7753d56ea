import type { Config } from './config.js';

/** `devtoolbox keys …` — placeholder until API keys land. */
export async function keysCommand(_args: string[], _config: Config): Promise<number> {
  process.stderr.write('devtoolbox: keys commands are not available yet\n');
  return 2;
}
