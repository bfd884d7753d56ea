/**
 * callback_url is judged at create by the fetcher's own synchronous check (checkTargetUrl):
 * the same refusals, with the same code and message, as a delivery would meet.
 */
import { describe, expect, it } from 'vitest';
import { closeAfterEach, testServices, toolContext } from '../../../test/harness.js';
import { ToolError } from '../../errors.js';
import { invokeTool } from '../../invoke.js';
import { closeServices, type Services } from '../../services.js';
import { createMemoryStore } from '../../state/index.js';
import { cronTaskCreate } from './cron-task-create.js';

const BLOCKED_MSG = 'The URL points to an address that is not allowed (private, loopback, link-local or otherwise non-public)';
const closing = closeAfterEach();

/** Services for one test (closed after it), private addresses allowed or not. */
async function services(allowPrivate: boolean): Promise<Services> {
  const s = await testServices({ FETCH_ALLOW_PRIVATE: String(allowPrivate) }, { store: createMemoryStore() });
  closing({ close: () => closeServices(s) });
  return s;
}

/** The stored callback_url, or the refusal as {status, code, message, details}. */
async function create(s: Services, callback_url: string): Promise<unknown> {
  try {
    const r = await invokeTool(cronTaskCreate, { name: 'hook', schedule: '@daily', callback_url }, toolContext(s));
    return ((r.json as { task: { callback_url: string } }).task).callback_url;
  } catch (err) {
    if (!(err instanceof ToolError)) throw err;
    return { status: err.status, ...err.toJSON() };
  }
}

const refused = { status: 400, code: 'URL_NOT_ALLOWED', message: `callback_url: ${BLOCKED_MSG}`, details: [{ path: 'callback_url', message: BLOCKED_MSG }] };

describe('cron_task_create: callback_url', () => {
  it('regression: callback URLs naming localhost were accepted at create and refused only at delivery', async () => {
    const s = await services(false);
    const urls = ['http://localhost/hook', 'https://LOCALHOST.:8443/hook', 'http://api.localhost/hook', 'http://localhost:8080/'];
    expect(await Promise.all(urls.map((u) => create(s, u)))).toStrictEqual(urls.map(() => refused));
  });

  it('refuses private and loopback literals in every IPv6 form at create', async () => {
    const s = await services(false);
    const urls = ['http://[::127.0.0.1]/hook', 'http://[::ffff:7f00:1]/hook', 'http://[64:ff9b::10.0.0.1]/hook', 'http://[2002:a9fe:a9fe::]/hook', 'http://[fd00::1]/hook', 'http://169.254.169.254/latest'];
    expect(await Promise.all(urls.map((u) => create(s, u)))).toStrictEqual(urls.map(() => refused));
  });

  it('accepts public targets and other host names (judged when delivered)', async () => {
    const s = await services(false);
    const urls = ['https://hooks.example.com/x', 'http://[2606:4700::1111]/hook', 'http://[64:ff9b::8.8.8.8]/hook', 'https://localhost.example.com/hook'];
    expect(await Promise.all(urls.map((u) => create(s, u)))).toStrictEqual(urls.map((u) => new URL(u).href));
  });

  it('FETCH_ALLOW_PRIVATE=true allows localhost and private literals, as the fetcher does', async () => {
    const s = await services(true);
    const urls = ['http://localhost:8080/hook', 'http://127.0.0.1:8080/hook', 'http://[::1]:8080/hook', 'http://10.0.0.5/hook'];
    expect(await Promise.all(urls.map((u) => create(s, u)))).toStrictEqual(urls);
    // The scheme, credential and port rules still apply.
    expect(await create(s, 'http://localhost:25/hook')).toMatchObject({ status: 400, code: 'URL_NOT_ALLOWED', message: 'callback_url: Port 25 is not allowed' });
  });
});
