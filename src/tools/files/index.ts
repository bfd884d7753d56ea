import type { AnyTool } from '../../registry.js';

export const filesTools: AnyTool[] = [];
