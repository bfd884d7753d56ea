import { defineManifest } from '../../core/family.js';

/** The formatting family's name (src/tools/manifests.ts); `load` imports the rest. */
export const formatting = defineManifest({
  name: 'formatting',
  load: async () => (await import('./index.js')).formattingFamily,
});
