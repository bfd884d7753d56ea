/**
 * A minimal MCP Apps host for the tests (browser side; bundled by esbuild in test/apps-views.test.ts),
 * built on the ext-apps SDK's host side (`AppBridge`, as its basic-host example is): it lists the
 * tools as a client that renders Apps, reads the tool's `ui://` view, calls the tool, loads the view
 * in a sandboxed frame (opaque origin, the extension's default CSP) and hands it the input and the
 * result; the view's own tool calls go back to the server. Every request goes to this page's
 * origin (`/mcp`, which the test's loopback server forwards to devtoolbox).
 *
 * The page reads `{tool, args}` from its hash and exposes what happened on `window.host`.
 */
import { AppBridge, getToolUiResourceUri, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';

const MODERN = '2026-07-28';
const APP_MIME = 'text/html;profile=mcp-app';
/** The default CSP the extension tells hosts to apply when a view declares no domains. */
const CSP = "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'";

interface HostState {
  /** Tool calls the view made (name and arguments), in order. */
  calls: Array<{ name: string; arguments: Record<string, unknown> }>;
  /** Files the view asked the host to download. */
  downloads: unknown[];
  /** Set once the view has received the result. */
  ready: boolean;
  error?: string;
}
const state: HostState = { calls: [], downloads: [], ready: false };
(window as unknown as { host: HostState }).host = state;

let nextId = 1;
/** One 2026-07-28 request to /mcp, declaring MCP Apps. */
async function rpc(method: string, params: Record<string, unknown>, name?: string): Promise<Record<string, any>> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': method };
  if (name !== undefined) headers['mcp-name'] = name;
  const _meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: [APP_MIME] } } },
    'io.modelcontextprotocol/clientInfo': { name: 'devtoolbox-test-host', version: '1.0.0' },
  };
  const res = await fetch('/mcp', { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta } }) });
  const body = (await res.json()) as { result?: Record<string, any>; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result!;
}

async function main(): Promise<void> {
  const { tool: toolName, args } = JSON.parse(decodeURIComponent(location.hash.slice(1))) as { tool: string; args: Record<string, unknown> };
  const { tools } = await rpc('tools/list', {});
  const tool = (tools as Array<{ name: string }>).find((t) => t.name === toolName);
  if (!tool) throw new Error(`no tool ${toolName}`);
  const uri = getToolUiResourceUri(tool);
  if (!uri) throw new Error(`${toolName} names no view`);
  const read = await rpc('resources/read', { uri }, uri);
  const html = (read.contents as Array<{ text: string; mimeType: string }>)[0]!;
  if (html.mimeType !== APP_MIME) throw new Error(`unexpected MIME type ${html.mimeType}`);
  const result = await rpc('tools/call', { name: toolName, arguments: args }, toolName);

  const iframe = document.createElement('iframe');
  iframe.id = 'view';
  iframe.setAttribute('sandbox', 'allow-scripts');
  iframe.style.cssText = 'width:760px;height:480px;border:1px solid #ccc;display:block';
  document.body.append(iframe);
  const bridge = new AppBridge(
    null,
    { name: 'devtoolbox-test-host', version: '1.0.0' },
    { serverTools: {}, downloadFile: {}, openLinks: {}, logging: {} },
    { hostContext: { theme: 'light', displayMode: 'inline', platform: 'web', containerDimensions: { width: 760, maxHeight: 2000 } } },
  );
  bridge.oncalltool = async (params) => {
    state.calls.push({ name: params.name, arguments: (params.arguments ?? {}) as Record<string, unknown> });
    const { resultType: _r, _meta: _m, ...r } = await rpc('tools/call', { name: params.name, arguments: params.arguments ?? {} }, params.name);
    return r as never;
  };
  bridge.ondownloadfile = async (params) => {
    state.downloads.push(params.contents);
    return {};
  };
  bridge.onsizechange = ({ height }) => {
    if (height !== undefined) iframe.style.height = `${Math.ceil(height) + 2}px`;
  };
  bridge.onopenlink = async () => ({});
  bridge.oninitialized = () => {
    void (async () => {
      await bridge.sendToolInput({ arguments: args });
      const { resultType: _r, _meta: _m, ...r } = result;
      await bridge.sendToolResult(r as never);
      state.ready = true;
    })();
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!));
  iframe.srcdoc = html.text.replace('<head>', `<head><meta http-equiv="Content-Security-Policy" content="${CSP}">`);
}

main().catch((err: unknown) => {
  state.error = err instanceof Error ? err.message : String(err);
  document.body.append(Object.assign(document.createElement('pre'), { id: 'host-error', textContent: state.error }));
});
