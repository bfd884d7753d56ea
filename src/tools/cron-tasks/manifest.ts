import { defineManifest } from '../../core/family.js';
import { LOGS, TASKS } from './stored.js';

/** The cron-tasks family's name and collections (src/tools/manifests.ts); `load` imports the rest. */
export const cronTasks = defineManifest({
  name: 'cron-tasks',
  collections: [TASKS, LOGS],
  load: async () => (await import('./index.js')).cronTasksFamily,
});
