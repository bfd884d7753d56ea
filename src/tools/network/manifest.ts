import { defineManifest } from '../../core/family.js';

/** The network family's name (src/tools/manifests.ts); `load` imports the rest. */
export const network = defineManifest({
  name: 'network',
  load: async () => (await import('./index.js')).networkFamily,
});
