import { Writable } from 'node:stream';
import { createLogger, SecretScrubber, type Logger } from '../../../src/logger.js';

export interface CapturedLog {
  logger: Logger;
  scrubber: SecretScrubber;
  lines(): Array<Record<string, unknown>>;
  text(): string;
}

/** A real pino logger (JSON, level trace) bound to { stack }, writing into memory. */
export function captureLog(stack = 'test'): CapturedLog {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level: 'trace', format: 'json', scrubber, destination }).child({ stack });
  const text = () => chunks.join('');
  return {
    logger,
    scrubber,
    text,
    lines: () =>
      text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
