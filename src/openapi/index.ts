/** The OpenAPI 3.1 document, derived from the registry and the families. */
export { buildOpenApi, operationsOf } from './document.js';
export { errorResponses, toolErrorCodes } from './errors.js';
export { sampleOf, staticResponseExample } from './samples.js';
