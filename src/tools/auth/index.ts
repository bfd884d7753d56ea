import { defineFamily } from '../../core/family.js';
import { authInfo } from './auth-info.js';
import { adminRoutes } from './admin-routes.js';
import { registerRoute } from './routes.js';

export { authInfo };

const tag = { name: 'Auth', description: 'API keys: register, and see your plan, limits and usage. Fields are snake_case.' };

/**
 * The auth family: what an agent may do with its own key (registration is a plain REST route).
 * The keys, plans and limits themselves are a core service (`services.auth`, src/auth/).
 */
export const authFamily = defineFamily({
  instructions: 'see the calling API key\'s plan, limits and usage.',
  tag,
  tools: [authInfo],
  errors: ['STORAGE_UNAVAILABLE'],
  routes: [registerRoute, ...adminRoutes],
});
