import type { AnyTool } from '../../registry.js';
import { fileProcess } from './file-process.js';

export const filesTools: AnyTool[] = [fileProcess as unknown as AnyTool];
