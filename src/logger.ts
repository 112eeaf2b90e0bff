/**
 * One root pino logger. Children bind `{ stack, endpoint }`. Two layers keep secrets out of logs:
 * pino's `redact` for well-known keys, and a scrubber that replaces every registered secret value
 * (client secrets, pre-issued and fetched tokens) wherever it appears in a finished log line.
 */
import { Writable } from 'node:stream';
import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogFormat, LogLevel } from './config/types.js';

export type { Logger };

import { REDACTED, type SecretScrubber } from './secrets.js';

export const REDACT_PATHS = [
  'secret',
  'token',
  'password',
  'authorization',
  '*.secret',
  '*.token',
  '*.password',
  '*.authorization',
  '*.headers.authorization',
  '*.auth.secret',
  '*.auth.token',
  'stacks[*].auth.secret',
  'stacks[*].auth.token',
];

export interface LoggerOptions {
  level: LogLevel;
  format: LogFormat;
  scrubber: SecretScrubber;
  /** Where lines go (default stdout); tests pass a stream and parse the JSON lines. */
  destination?: NodeJS.WritableStream;
}

export function createLogger(opts: LoggerOptions): Logger {
  const base = opts.destination ?? process.stdout;
  const dest = opts.format === 'pretty' ? prettyStream(base) : base;
  return pino(
    {
      level: opts.level,
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: REDACTED },
      hooks: { streamWrite: (line) => opts.scrubber.scrub(line) },
    },
    dest as DestinationStream,
  );
}

/** LOG_FORMAT=pretty: `time LEVEL [stack/endpoint] message key=value …`, one line per entry. */
function prettyStream(out: NodeJS.WritableStream): Writable {
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line) out.write(`${formatPretty(line)}\n`);
      }
      done();
    },
  });
}

export function formatPretty(line: string): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  const { time, level, msg, stack, endpoint, ...rest } = entry;
  const where = [stack, endpoint].filter((x) => x !== undefined).join('/');
  const extra = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  // pino's labels (trace … fatal), aligned: `INFO `, `ERROR`.
  const lvl = String(level).toUpperCase().padEnd(5);
  return [String(time ?? ''), lvl, where ? `[${where}]` : '', String(msg ?? ''), extra].filter(Boolean).join(' ');
}
