import { escapeHtml } from '../../docs/pages.js';

/** Headers of every sign-in page: never cached, never framed (clickjacking), no scripts at all. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  // same-origin, not no-referrer: with no-referrer Chromium posts the form with `Origin: null`, which the browser guard refuses.
  'referrer-policy': 'same-origin',
};

/**
 * The headers of a sign-in form: browsers hold the whole redirect chain of a form post to
 * `form-action`, which ends at the client's redirect URI, so its origin is allowed too.
 */
export function formPageHeaders(redirectUri: string): Record<string, string> {
  let origin: string;
  try {
    origin = new URL(redirectUri).origin;
  } catch {
    return { ...PAGE_HEADERS };
  }
  // An opaque origin ("null", custom schemes) cannot be named: the scheme is.
  const source = origin === 'null' ? `${new URL(redirectUri).protocol}` : origin;
  return { ...PAGE_HEADERS, 'content-security-policy': PAGE_HEADERS['content-security-policy']!.replace("form-action 'self'", `form-action 'self' ${source}`) };
}

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>devtoolbox-mcp · ${escapeHtml(title)}</title>
<link rel="stylesheet" href="/docs/assets/devtoolbox.css">
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png" sizes="32x32">
</head>
<body class="dtb-landing">
<main>
<h1>devtoolbox-mcp</h1>
${body}
</main>
</body>
</html>`;
}

/** What the sign-in page shows about the request. */
export interface SignInView {
  uid: string;
  csrf: string;
  clientName: string;
  redirectHost: string;
  /** An error of the previous submission (wrong key, bad e-mail, registration limit). */
  error?: string | undefined;
  /** A key just created for an e-mail: shown once, then the user approves with it. */
  newKey?: string | undefined;
}

/**
 * The sign-in page: which client asks and where it will send the user back; paste an API key or
 * get a free one for an e-mail; approve or deny. A plain form, no script.
 */
export function signInPage(v: SignInView): string {
  const action = `/oauth/interaction/${encodeURIComponent(v.uid)}`;
  const csrf = `<input type="hidden" name="csrf" value="${escapeHtml(v.csrf)}">`;
  const error = v.error ? `<p class="error" role="alert" id="signin-error">${escapeHtml(v.error)}</p>` : '';
  const fresh = v.newKey
    ? `<p id="new-key">Your new API key (shown only now; keep it somewhere safe): <code>${escapeHtml(v.newKey)}</code></p>`
    : '';
  return layout(
    'sign in',
    `<h2>Sign in</h2>
<p><strong id="client-name">${escapeHtml(v.clientName)}</strong> asks to use devtoolbox-mcp's tools on your behalf, with your API key's plan and limits. After you decide you go back to <strong id="redirect-host">${escapeHtml(v.redirectHost)}</strong>.</p>
${error}${fresh}
<form method="post" action="${escapeHtml(action)}">
${csrf}
<p><label for="api_key">Your API key</label><br><input type="password" id="api_key" name="api_key" autocomplete="off" spellcheck="false" size="40" value="${v.newKey ? escapeHtml(v.newKey) : ''}"></p>
<p><button type="submit" name="action" value="approve" id="approve">Approve</button> <button type="submit" name="action" value="deny" id="deny">Deny</button></p>
</form>
<h3>No key yet?</h3>
<form method="post" action="${escapeHtml(action)}">
${csrf}
<p><label for="email">E-mail address</label><br><input type="email" id="email" name="email" size="40"></p>
<p><button type="submit" name="action" value="register" id="register">Get a free key</button></p>
</form>`,
  );
}

/** An error page: for a request that must not be sent back to its client (bad client or redirect URI). */
export function errorPage(error: string, description: string): string {
  return layout('sign-in error', `<h2>Sign-in failed</h2>\n<p id="error-code"><code>${escapeHtml(error)}</code></p>\n<p id="error-description">${escapeHtml(description)}</p>`);
}
