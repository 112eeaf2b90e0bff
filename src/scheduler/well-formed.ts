/**
 * Ids that can be asked for: text with a lone UTF-16 surrogate cannot be encoded in a URL, so such
 * an id is skipped; one hostile id costs only itself, not its endpoint.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import type { Logger } from '../logger.js';

export function wellFormedIds(ids: readonly string[], endpoint: DataEndpoint, logger: Logger): string[] {
  const usable = ids.filter((id) => id.isWellFormed());
  if (usable.length < ids.length) logger.debug({ endpoint, skipped: ids.length - usable.length }, 'ids that are not well-formed text skipped');
  return usable;
}
