import { defineManifest } from '../../core/family.js';

/** The media family's name (src/tools/manifests.ts); `load` imports the rest. */
export const media = defineManifest({
  name: 'media',
  load: async () => (await import('./index.js')).mediaFamily,
});
