/**
 * The families, loaded from the one family list (./manifests.ts). The registry, the HTTP face,
 * OpenAPI, /docs, MCP and `serve` loop over them and name no family or tool.
 */
import { loadFamily, type Family } from '../core/family.js';
import { Registry, type AnyTool } from '../registry.js';
import { manifests } from './manifests.js';

/** Every family, in the order of the list. */
export const families: readonly Family[] = await Promise.all(manifests.map(loadFamily));

/** Every tool of the service. */
export const allTools: AnyTool[] = families.flatMap((f) => f.tools);

/** The one registry; duplicate names throw here, at start-up. */
export function createRegistry(source: readonly Family[] | readonly AnyTool[] = families): Registry<Family> {
  return new Registry<Family>(source);
}
