import type { AnyTool } from '../../registry.js';

export const authTools: AnyTool[] = [];
