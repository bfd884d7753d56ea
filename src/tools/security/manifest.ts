import { defineManifest } from '../../core/family.js';

/** The security family's name (src/tools/manifests.ts); `load` imports the rest. */
export const security = defineManifest({
  name: 'security',
  load: async () => (await import('./index.js')).securityFamily,
});
