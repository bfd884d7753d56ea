/**
 * The family list: adding a family is one folder plus one line here. The registry, the HTTP
 * face, OpenAPI, /docs, MCP and `serve` loop over this list and name no family or tool.
 */
import type { Family } from '../core/family.js';
import { Registry, type AnyTool } from '../registry.js';
import { authFamily } from './auth/index.js';
import { cronTasksFamily } from './cron-tasks/index.js';
import { filesFamily } from './files/index.js';
import { formattingFamily } from './formatting/index.js';
import { mediaFamily } from './media/index.js';
import { seoFamily } from './seo/index.js';
import { shortenerFamily } from './shortener/index.js';

/** Every family, in the order tools/list and /docs show their tools. */
export const families: readonly Family[] = [formattingFamily, mediaFamily, seoFamily, shortenerFamily, cronTasksFamily, filesFamily, authFamily];

/** Every tool of the service. */
export const allTools: AnyTool[] = families.flatMap((f) => f.tools);

/** The one registry; duplicate names throw here, at start-up. */
export function createRegistry(source: readonly Family[] | readonly AnyTool[] = families): Registry {
  return new Registry(source);
}
