/** Tasks (issue 19): slow tool calls answered now and fetched later. docs/tasks.md. */
export * from './record.js';
export * from './manager.js';
