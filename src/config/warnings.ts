/**
 * Values that are valid but deserve a warning at start-up. The caller logs them; loading does not,
 * because it has no logger and runs again on every reload.
 */
import type { ExporterConfig } from './types.js';

/** The real service allows 60 requests a minute (see docs/configuration.md). */
export const SERVICE_REQUESTS_PER_MINUTE = 60;

export interface ConfigWarning {
  readonly stack: string;
  readonly key: string;
  readonly message: string;
}

export function configWarnings(config: ExporterConfig): ConfigWarning[] {
  const warnings: ConfigWarning[] = [];
  for (const s of config.stacks) {
    if (s.rateLimitPerMinute > SERVICE_REQUESTS_PER_MINUTE) {
      warnings.push({
        stack: s.name,
        key: 'rateLimitPerMinute',
        message: `rateLimitPerMinute is ${s.rateLimitPerMinute}, above the ${SERVICE_REQUESTS_PER_MINUTE} requests a minute the real CMDB service allows: fine for the simulator or a CMDB with a higher limit, otherwise expect 429 answers`,
      });
    }
  }
  return warnings;
}
