import type { AnyTool } from '../../registry.js';

export const shortenerTools: AnyTool[] = [];
