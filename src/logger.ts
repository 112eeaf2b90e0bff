/**
 * One root pino logger. Children bind `{ stack, endpoint }`. Two layers keep secrets out of logs:
 * pino's `redact` for well-known keys, and a scrubber that replaces every registered secret value
 * (client secrets, pre-issued and fetched tokens) wherever it appears in a finished log line.
 */
import { Writable } from 'node:stream';
import { pino, type Logger, type DestinationStream } from 'pino';
import type { LogFormat, LogLevel } from './config/types.js';

export type { Logger };

export const REDACTED = '[REDACTED]';

/** Secret values to scrub from output. Shared by the logger, error messages and the landing page. */
export class SecretScrubber {
  private values = new Set<string>();

  add(value: string | undefined): void {
    // Very short values would scrub ordinary words; secrets and tokens are longer than this.
    if (value && value.length >= 4) this.values.add(value);
  }

  clear(): void {
    this.values = new Set();
  }

  scrub(text: string): string {
    let out = text;
    for (const v of this.values) {
      if (out.includes(v)) out = out.split(v).join(REDACTED);
      // Secrets also appear JSON-escaped inside log lines.
      const escaped = JSON.stringify(v).slice(1, -1);
      if (escaped !== v && out.includes(escaped)) out = out.split(escaped).join(REDACTED);
    }
    return out;
  }
}

export const REDACT_PATHS = [
  'secret',
  'token',
  'password',
  'authorization',
  'headers.authorization',
  '*.secret',
  '*.token',
  '*.password',
  '*.authorization',
  '*.headers.authorization',
  'auth.secret',
  'auth.token',
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

const COLOURLESS_LEVEL: Record<string, string> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
  fatal: 'FATAL',
};

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
  const lvl = COLOURLESS_LEVEL[String(level)] ?? String(level);
  return [String(time ?? ''), lvl, where ? `[${where}]` : '', String(msg ?? ''), extra].filter(Boolean).join(' ');
}
