import { defineFamily } from '../../core/family.js';
import { fileProcess } from './file-process.js';

/** CSV, TSV, JSON and XML tables. */
export const filesFamily = defineFamily({
  instructions: 'parse, generate, analyse and convert CSV, TSV, JSON and XML tables.',
  tag: { name: 'Files', description: 'Parse, generate, analyse and convert CSV, TSV, JSON and XML tables.' },
  tools: [fileProcess],
  errors: ['PARSE_ERROR'],
});
