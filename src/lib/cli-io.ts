/** Where a CLI command writes (process stdio, or a capture in tests). */
export interface CliIo {
  out(s: string): void;
  err(s: string): void;
}

export const stdio: CliIo = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) };
