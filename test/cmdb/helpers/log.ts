import { captureLogger, type CapturedLog } from '../../helpers/log.js';

export type { CapturedLog };

/** The shared in-memory logger, bound to { stack } as the client's logger is. */
export function captureLog(stack = 'test'): CapturedLog {
  const captured = captureLogger();
  return { ...captured, logger: captured.logger.child({ stack }) };
}
