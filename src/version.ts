import { readFileSync } from 'node:fs';

/**
 * The service's name and version, read once from package.json (one level above both `src/` and
 * `dist/`): MCP's server info, OpenAPI's `info` and `--help` all say the same.
 */
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { name: string; version: string };

export const SERVER_NAME: string = pkg.name;
export const SERVER_VERSION: string = pkg.version;
/** What MCP calls `serverInfo` / `Implementation`. */
export const SERVER_INFO: { readonly name: string; readonly version: string } = Object.freeze({ name: SERVER_NAME, version: SERVER_VERSION });
