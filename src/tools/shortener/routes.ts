import type { Hono } from 'hono';
import { ToolError } from '../../errors.js';
import type { ProjectionHelpers } from '../../http-projection.js';
import type { Services } from '../../services.js';
import { resolveShortLink } from './links.js';

/** `GET /s/{code}`: 302 to the long URL with one click counted; not a tool, not rate limited. */
export function shortLinkRoutes(services: Services) {
  return (app: Hono, helpers: ProjectionHelpers): void => {
    app.get('/s/:code', async (c) => {
      try {
        const url = await resolveShortLink(services, c.req.param('code'));
        if (url === null) throw new ToolError('NOT_FOUND', 'Unknown short link');
        return c.redirect(url, 302);
      } catch (err) {
        return helpers.errorResponse(c, err);
      }
    });
  };
}
