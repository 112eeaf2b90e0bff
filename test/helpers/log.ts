import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/logger.js';
import { SecretScrubber } from '../../src/secrets.js';

export interface CapturedLog {
  logger: Logger;
  scrubber: SecretScrubber;
  /** Every line written so far, parsed. */
  lines(): Array<Record<string, unknown>>;
  /** Every line written so far, raw. */
  text(): string;
}

/** A real pino logger (JSON, level trace) writing into memory, for assertions on parsed lines. */
export function captureLogger(level: 'trace' | 'debug' | 'info' = 'trace'): CapturedLog {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level, format: 'json', scrubber, destination });
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
