import { ICON_PNGS } from './icons.generated.js';

/** Pixel sizes every icon is rendered at (assets/icons/*.svg → src/docs/icons.generated.ts). */
export const ICON_SIZES = [48, 96] as const;

/** The server's own icon; the others are named after the tool families. */
export const SERVER_ICON = 'devtoolbox';

/** Where the HTTP app serves an icon. */
export function iconPath(name: string, size: (typeof ICON_SIZES)[number]): string {
  return `/icons/${name}-${size}.png`;
}

/** Whether an icon of that name exists (a family added without its SVG has none). */
export function hasIcon(name: string): boolean {
  return `${name}-${ICON_SIZES[0]}.png` in ICON_PNGS;
}

/** The PNG bytes served at /icons/<file>, or undefined for an unknown file. */
export function iconPng(file: string): Buffer | undefined {
  const b64 = Object.hasOwn(ICON_PNGS, file) ? ICON_PNGS[file] : undefined;
  return b64 === undefined ? undefined : Buffer.from(b64, 'base64');
}

/** Every icon's name (the server's and one per family), sorted. */
export const ICON_NAMES: readonly string[] = Object.keys(ICON_PNGS)
  .filter((f) => f.endsWith(`-${ICON_SIZES[0]}.png`))
  .map((f) => f.slice(0, -`-${ICON_SIZES[0]}.png`.length));

/**
 * The pages show icons as CSS backgrounds (`<span class="dtb-icon dtb-icon-<name>">`): decorative,
 * so no alt text to keep in step, and the 96 px file for high-density screens through image-set.
 */
export function iconCss(): string {
  const rules = ICON_NAMES.map(
    (n) => `.dtb-icon-${n} { background-image: url(${iconPath(n, 48)}); background-image: image-set(url(${iconPath(n, 48)}) 1x, url(${iconPath(n, 96)}) 2x); }`,
  );
  return `.dtb-icon { display: inline-block; width: 1.5rem; height: 1.5rem; background-size: contain; background-repeat: no-repeat; vertical-align: -0.3rem; margin-right: .5rem; }
.dtb-icon-lg { width: 2.5rem; height: 2.5rem; vertical-align: -0.55rem; }
${rules.join('\n')}
`;
}

/** An MCP `Icon` (2025-11-25 and later): where a client fetches the image. */
export interface McpIcon {
  src: string;
  mimeType: 'image/png';
  sizes: string[];
}

/** A tool's icons: its family's, at the larger size only (it scales down; every tool repeats it in tools/list). */
export const TOOL_ICON_SIZES = [96] as const;

/**
 * An icon's MCP `icons` (both sizes unless told), as absolute URLs under the server's public
 * base: data: URIs would put kilobytes into every tools/list answer; a URL costs ≈ 100 bytes and
 * the image is fetched once. `baseUrl` without a trailing slash, as PUBLIC_BASE_URL is held.
 */
export function mcpIcons(baseUrl: string, name: string, sizes: readonly (typeof ICON_SIZES)[number][] = ICON_SIZES): McpIcon[] {
  return sizes.map((size) => ({ src: `${baseUrl}${iconPath(name, size)}`, mimeType: 'image/png', sizes: [`${size}x${size}`] }));
}
