import { defineManifest } from '../../core/family.js';
import { RATE_DAYS } from '../../auth/auth.js';
import { API_KEYS } from '../../auth/keys.js';
import { OAUTH_RECORDS } from '../../auth/oauth/adapter.js';
import { OAUTH_SECRETS } from '../../auth/oauth/secrets.js';

/** The auth family's name and collections (src/tools/manifests.ts); `load` imports the rest. */
export const auth = defineManifest({
  name: 'auth',
  collections: [API_KEYS, RATE_DAYS, OAUTH_RECORDS, OAUTH_SECRETS],
  load: async () => (await import('./index.js')).authFamily,
});
