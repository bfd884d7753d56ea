import type { AnyTool } from '../../registry.js';

export const cronTasksTools: AnyTool[] = [];
