import { defineManifest } from '../../core/family.js';

/** The data family's name (src/tools/manifests.ts); `load` imports the rest. */
export const data = defineManifest({
  name: 'data',
  load: async () => (await import('./index.js')).dataFamily,
});
