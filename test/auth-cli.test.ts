import { describe, expect, it } from 'vitest';
import { keysCommand, type CliIo } from '../src/keys-cli.js';
import { startTestApp, testConfig } from './harness.js';

function capture(): CliIo & { stdout: string; stderr: string } {
  const io = { stdout: '', stderr: '', out: (s: string) => void (io.stdout += s), err: (s: string) => void (io.stderr += s) };
  return io;
}

describe('devtoolbox keys', () => {
  it('list and set-plan against DATA_DIR; refuses politely while a server owns it', async () => {
    const config = testConfig();
    const env = { DATA_DIR: config.dataDir };

    const empty = capture();
    expect(await keysCommand(['list'], config, empty)).toBe(0);
    expect(empty.stdout).toBe('No API keys yet (POST /api/auth/register creates one).\n');

    const app = await startTestApp({ env });
    const res = await app.request('POST', '/api/auth/register', { email: 'ops@example.com' });
    const { api_key } = (await res.json()) as { api_key: string };
    const busy = capture();
    expect(await keysCommand(['set-plan', 'ops@example.com', 'pro'], config, busy)).toBe(1);
    expect(busy.stderr).toMatch(/^devtoolbox keys: DATA_DIR is in use \(keys can only be changed with the server stopped\): another devtoolbox process .* owns DATA_DIR/);
    expect(busy.stderr).toContain('Stop the server, run the command again, then start the server.');
    await app.close();

    const ok = capture();
    expect(await keysCommand(['set-plan', 'OPS@example.com', 'pro'], config, ok)).toBe(0);
    expect(ok.stdout).toBe(`ops@example.com (${api_key.slice(0, 8)}…) is now on the pro plan\n`);

    const list = capture();
    expect(await keysCommand(['list'], config, list)).toBe(0);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^PREFIX\s+PLAN\s+CREATED\s+EMAIL$/);
    expect(lines[1]).toMatch(new RegExp(`^${api_key.slice(0, 8)}…\\s+pro\\s+\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\s+ops@example.com$`));
    expect(list.stdout).not.toContain(api_key);

    // The server sees the new plan after a restart.
    const again = await startTestApp({ env });
    const info = await again.request('GET', '/api/auth/info', undefined, { authorization: `Bearer ${api_key}` });
    expect(((await info.json()) as { plan: string; limits: unknown })).toMatchObject({ plan: 'pro', limits: { per_minute: 60, per_day: 5000 } });
    await again.close();
  });

  it('usage errors exit 2, an unknown address exits 1', async () => {
    const config = testConfig();
    const bad = capture();
    expect(await keysCommand(['set-plan', 'a@example.com', 'gold'], config, bad)).toBe(2);
    expect(bad.stderr).toContain('plan must be free or pro, got "gold"');
    const badEmail = capture();
    expect(await keysCommand(['set-plan', 'nope', 'pro'], config, badEmail)).toBe(2);
    expect(badEmail.stderr).toBe('devtoolbox keys: Invalid input: email is not a valid e-mail address\n');
    const unknown = capture();
    expect(await keysCommand(['set-plan', 'a@example.com', 'pro'], config, unknown)).toBe(1);
    expect(unknown.stderr).toBe('devtoolbox keys: no API key is registered for a@example.com\n');
    const what = capture();
    expect(await keysCommand(['frobnicate'], config, what)).toBe(2);
    expect(what.stderr).toContain('Usage:');
    const help = capture();
    expect(await keysCommand(['--help'], config, help)).toBe(0);
    expect(help.stdout).toContain('devtoolbox keys set-plan <email> pro|free');
  });
});
