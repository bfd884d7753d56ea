import { defineManifest } from '../../core/family.js';

/** The files family's name (src/tools/manifests.ts); `load` imports the rest. */
export const files = defineManifest({
  name: 'files',
  load: async () => (await import('./index.js')).filesFamily,
});
