import type { AnyTool } from '../../registry.js';

export const mediaTools: AnyTool[] = [];
