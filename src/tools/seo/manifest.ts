import { defineManifest } from '../../core/family.js';

/** The seo family's name (src/tools/manifests.ts); `load` imports the rest. */
export const seo = defineManifest({
  name: 'seo',
  load: async () => (await import('./index.js')).seoFamily,
});
