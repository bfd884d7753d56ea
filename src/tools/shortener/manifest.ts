import { defineManifest } from '../../core/family.js';
import { LINK_CLICKS, LINKS } from './links.js';

/** The shortener family's name and collections (src/tools/manifests.ts); `load` imports the rest. */
export const shortener = defineManifest({
  name: 'shortener',
  collections: [LINKS, LINK_CLICKS],
  load: async () => (await import('./index.js')).shortenerFamily,
});
