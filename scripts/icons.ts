// npx tsx scripts/icons.ts: renders assets/icons/*.svg to PNG (48 and 96 px) into
// src/docs/icons.generated.ts (test/icons.test.ts fails when it is stale).
import fs from 'node:fs';
import { ICON_MODULE, iconsModule, renderIcons } from './icons-render.js';

const pngs = await renderIcons();
fs.writeFileSync(ICON_MODULE, iconsModule(pngs));
process.stderr.write(`wrote ${pngs.size} icons to src/docs/icons.generated.ts\n`);
