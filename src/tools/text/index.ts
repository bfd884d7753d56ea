import type { AnyTool } from '../../registry.js';

export const textTools: AnyTool[] = [];
