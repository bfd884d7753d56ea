import { Registry, type AnyTool } from '../registry.js';
import { authTools } from './auth/index.js';
import { convertTools } from './convert/index.js';
import { cronTasksTools } from './cron-tasks/index.js';
import { filesTools } from './files/index.js';
import { mediaTools } from './media/index.js';
import { seoTools } from './seo/index.js';
import { shortenerTools } from './shortener/index.js';
import { textTools } from './text/index.js';

/** Every tool of the service, in the order tools/list and /docs show them. */
export const allTools: AnyTool[] = [
  ...(convertTools as AnyTool[]),
  ...textTools,
  ...mediaTools,
  ...seoTools,
  ...shortenerTools,
  ...cronTasksTools,
  ...filesTools,
  ...authTools,
];

/** The one registry; duplicate names throw here, at start-up. */
export function createRegistry(tools: AnyTool[] = allTools): Registry {
  return new Registry(tools);
}
