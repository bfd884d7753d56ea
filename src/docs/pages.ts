import { MODERN_VERSIONS } from '../mcp/wire.js';
import { LEGACY_VERSIONS } from '../mcp/legacy.js';
import { operationsOf } from '../openapi/index.js';
import type { AnyTool, Registry } from '../registry.js';
import { hasIcon, iconCss, iconPath, SERVER_ICON } from './icons.js';

/** Escapes text for HTML element content and double-quoted attributes. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Swagger UI's deep link to an operation: `#/{tag with _ for spaces}/{operationId}`. */
export function docsLink(tag: string, operationId: string): string {
  return `/docs#/${encodeURIComponent(tag.replace(/\s/g, '_'))}/${encodeURIComponent(operationId)}`;
}

/** The MCP client configuration snippets the landing page shows (also used by the tests). */
export function mcpSnippets(publicBaseUrl: string): { httpUrl: string; http: string; httpWithKey: string; stdio: string; stdioCheckout: string } {
  const httpUrl = `${publicBaseUrl}/mcp`;
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  return {
    httpUrl,
    http: json({ mcpServers: { devtoolbox: { type: 'http', url: httpUrl } } }),
    httpWithKey: json({ mcpServers: { devtoolbox: { type: 'http', url: httpUrl, headers: { Authorization: 'Bearer dtb_…' } } } }),
    stdio: json({ mcpServers: { devtoolbox: { command: 'npx', args: ['-y', 'devtoolbox-mcp', 'stdio'] } } }),
    stdioCheckout: json({
      mcpServers: {
        devtoolbox: { command: 'node', args: ['/path/to/devtoolbox-mcp/bin/devtoolbox.js', 'stdio'], env: { DATA_DIR: '/path/to/devtoolbox-data' } },
      },
    }),
  };
}

const SITE_CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bg: #ffffff; --panel: #f6f8fa; --line: #d0d7de; --accent: #0b6bcb; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9da7b3; --bg: #0d1117; --panel: #161b22; --line: #30363d; --accent: #4ea1f3; } }
body.dtb-landing { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
.dtb-landing main { max-width: 60rem; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
.dtb-landing h1 { font-size: 2rem; margin: .5rem 0 .25rem; }
.dtb-landing h2 { margin-top: 2.25rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; }
.dtb-landing h3 { margin-bottom: .4rem; }
.dtb-landing a { color: var(--accent); }
.dtb-landing .lede { color: var(--muted); font-size: 1.1rem; margin-top: 0; }
.dtb-landing pre, .dtb-landing code { font: 14px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.dtb-landing pre { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: .75rem 1rem; overflow-x: auto; user-select: all; }
.dtb-landing :not(pre) > code { background: var(--panel); padding: .1rem .3rem; border-radius: 4px; }
.dtb-landing table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
.dtb-landing th, .dtb-landing td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.dtb-landing th { font-size: .85rem; color: var(--muted); font-weight: 600; }
.dtb-landing nav.links a { margin-right: 1rem; font-weight: 600; }
.dtb-landing .method { font: 600 12px ui-monospace, monospace; padding: .1rem .35rem; border-radius: 4px; border: 1px solid var(--line); }
.dtb-bar { display: flex; gap: 1.25rem; align-items: center; padding: .6rem 1.25rem; background: #1b1f24; font: 600 15px system-ui, sans-serif; }
.dtb-bar a { color: #fff; text-decoration: none; }
.dtb-bar a:hover { text-decoration: underline; }
.dtb-bar .dtb-name { margin-right: auto; }
`;

/** Starts Swagger UI on /docs: offline (no validator badge, no remote URLs), spec from this server. */
const DOCS_INIT_JS = `'use strict';
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    validatorUrl: null,
    docExpansion: 'list',
    defaultModelsExpandDepth: 0,
    displayRequestDuration: true,
    filter: true,
    tryItOutEnabled: false,
    requestSnippetsEnabled: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  });
});
`;

/** The service's own static files under /docs/assets/ (kept in code so `dist/` needs no copying). */
export const OWN_ASSETS: Record<string, { contentType: string; text: string }> = {
  'devtoolbox.css': { contentType: 'text/css; charset=utf-8', text: SITE_CSS + iconCss() },
  'docs-init.js': { contentType: 'text/javascript; charset=utf-8', text: DOCS_INIT_JS },
};

/** GET /docs: Swagger UI, every script and style served by this server. */
export function docsPage(swaggerVersion: string): string {
  const v = encodeURIComponent(swaggerVersion);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>devtoolbox-mcp · API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css?v=${v}">
<link rel="stylesheet" href="/docs/assets/devtoolbox.css">
<link rel="icon" type="image/png" href="${iconPath(SERVER_ICON, 48)}" sizes="48x48">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="/docs/assets/favicon-16x16.png" sizes="16x16">
</head>
<body>
<header class="dtb-bar"><a class="dtb-name" href="/">${iconSpan(SERVER_ICON)}devtoolbox-mcp</a><a href="/">MCP connection</a><a href="/openapi.json">openapi.json</a></header>
<div id="swagger-ui"><noscript><p>The interactive reference needs JavaScript. The same content is in <a href="/openapi.json">/openapi.json</a>.</p></noscript></div>
<script src="/docs/assets/swagger-ui-bundle.js?v=${v}"></script>
<script src="/docs/assets/docs-init.js?v=${v}"></script>
</body>
</html>
`;
}

/** A decorative icon (see iconCss); only names of icons that exist reach it. */
function iconSpan(name: string, extra = ''): string {
  return `<span class="dtb-icon dtb-icon-${escapeHtml(name)}${extra ? ` ${extra}` : ''}" aria-hidden="true"></span>`;
}

function toolRows(tools: readonly AnyTool[], tag: string): string {
  return tools
    .map((t) => {
      const rest = operationsOf(t)
        .map((o) => `<a href="${escapeHtml(docsLink(tag, o.operationId))}"><span class="method">${o.method}</span> <code>${escapeHtml(o.path)}</code></a>`)
        .join('<br>');
      return `<tr><td><code>${escapeHtml(t.name)}</code></td><td>${escapeHtml(t.title)}<br><small>${escapeHtml(t.description)}</small></td><td>${rest || '<small>MCP only</small>'}</td></tr>`;
    })
    .join('\n');
}

/** GET /: what the service is and how to connect an MCP client (HTTP and stdio), then every tool. */
export function landingPage(registry: Registry, publicBaseUrl: string): string {
  const s = mcpSnippets(publicBaseUrl);
  const sections = registry.groups
    .map((g) => {
      const tag = g.tag;
      return `<h3 id="group-${escapeHtml(g.name.replace(/\s/g, '-'))}">${hasIcon(g.name) ? iconSpan(g.name) : ''}${escapeHtml(tag.name)}</h3>
<p>${escapeHtml(tag.description)}</p>
<table><thead><tr><th>MCP tool</th><th>What it does</th><th>REST</th></tr></thead><tbody>
${toolRows(g.tools, tag.name)}
</tbody></table>`;
    })
    .join('\n');
  // A short example that survives shell single quotes makes the best one-liner.
  const sample = registry.tools.find((t) => {
    const ex = JSON.stringify(t.example ?? null);
    return t.example !== undefined && ex.length < 100 && !ex.includes("'") && operationsOf(t).some((o) => o.method === 'POST' && !o.path.includes('{'));
  });
  const samplePost = sample ? operationsOf(sample).find((o) => o.method === 'POST' && !o.path.includes('{')) : undefined;
  const curl =
    sample && samplePost
      ? `<h3>REST in one line</h3>
<pre>curl -s -X POST ${escapeHtml(publicBaseUrl + samplePost.path)} -H 'content-type: application/json' \\
  -d '${escapeHtml(JSON.stringify(sample.example))}'</pre>`
      : '';
  const b = escapeHtml(publicBaseUrl);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>devtoolbox-mcp · connect</title>
<link rel="stylesheet" href="/docs/assets/devtoolbox.css">
<link rel="icon" type="image/png" href="${iconPath(SERVER_ICON, 48)}" sizes="48x48">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
</head>
<body class="dtb-landing">
<main>
<h1>${iconSpan(SERVER_ICON, 'dtb-icon-lg')}devtoolbox-mcp</h1>
<p class="lede">Developer tools for AI agents: ${registry.tools.length} tools over MCP (streamable HTTP and stdio), and the same tools as a REST API.</p>
<nav class="links"><a href="/docs">API reference (try it)</a><a href="/openapi.json">OpenAPI 3.1</a><a href="/api/tools">Tool list (JSON)</a><a href="/healthz">Health</a></nav>

<h2 id="mcp">Connect an MCP client</h2>
<h3 id="mcp-http">Streamable HTTP</h3>
<p>Endpoint: <code id="mcp-url">${escapeHtml(s.httpUrl)}</code> (<code>POST</code> only, stateless: no session id needed). <span id="mcp-protocols">Both protocol eras: ${MODERN_VERSIONS.join(', ')} (stateless: <code>server/discover</code> and <code>_meta</code> on each request) and ${LEGACY_VERSIONS[0]} with its <code>initialize</code> handshake; older revisions negotiate.</span></p>
<pre id="config-http">${escapeHtml(s.http)}</pre>
<p>With an API key (your own quota instead of the per-address one):</p>
<pre id="config-http-key">${escapeHtml(s.httpWithKey)}</pre>

<h3 id="mcp-stdio">stdio</h3>
<p>The client launches the server itself; no port, no limits. Command: <code id="stdio-command">npx -y devtoolbox-mcp stdio</code> (the package <code>devtoolbox-mcp</code>: not on the npm registry yet, so today from a tarball made by <code>npm pack</code>), or <code>node bin/devtoolbox.js stdio</code> from a checkout after <code>npm run build</code>.</p>
<pre id="config-stdio">${escapeHtml(s.stdio)}</pre>
<p>From a checkout:</p>
<pre id="config-stdio-checkout">${escapeHtml(s.stdioCheckout)}</pre>

<h2 id="rest">REST</h2>
<p>Every tool is also <code>POST ${b}/api/tools/{name}</code> with its input as the JSON body, and has its own path below. Answers are <code>{"success": true, …}</code>; errors <code>{"success": false, "error": {"code", "message", "details"}}</code>. The <a href="/docs">API reference</a> lets you run each one from the browser.</p>
${curl}

<h2 id="tools">Tools</h2>
${sections}
</main>
</body>
</html>
`;
}
