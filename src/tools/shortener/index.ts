import type { AnyTool } from '../../registry.js';
import { urlShorten } from './url-shorten.js';
import { urlStats } from './url-stats.js';

export { countLinksCreatedToday, linkOwnerKey, resolveShortLink } from './links.js';

export const shortenerTools: AnyTool[] = [urlShorten as unknown as AnyTool, urlStats as unknown as AnyTool];
