import type { AnyTool } from '../../registry.js';
import { metaExtract } from './meta-extract.js';
import { seoCheck } from './seo-check.js';

export const seoTools: AnyTool[] = [metaExtract as unknown as AnyTool, seoCheck as unknown as AnyTool];
