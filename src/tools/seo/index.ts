import type { AnyTool } from '../../registry.js';

export const seoTools: AnyTool[] = [];
