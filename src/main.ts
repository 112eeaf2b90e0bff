#!/usr/bin/env node
/**
 * Command line: parses the flags and loads the configuration, then dispatches: `backfill`
 * (src/backfill/command.ts), --check-config (check-config.ts), --once (once.ts), or the daemon
 * (src/app.ts), which it stops on SIGTERM or SIGINT and reloads on SIGHUP.
 * Exit codes: 0 ok; 1 runtime failure (or --once with a failed endpoint, or a saved query refused or failed); 2 bad flags or configuration.
 */
import { start, type App } from './app.js';
import { checkConfigReport, readConfiguration, type Configuration } from './check-config.js';
import { FlagError, FlagValueError, flagsHelp, parseFlags, type FlagValues } from './config/flags.js';
import { ConfigError, FolderInUseError } from './errors.js';
import { createLogger } from './logger.js';
import { runOnce } from './once.js';
import { SecretScrubber } from './secrets.js';
import { filterStacks } from './shard.js';
import { VERSION } from './version.js';

const HELP = `cmdb-exporter ${VERSION} — Prometheus exporter for the CMDB JSON API

Usage: cmdb-exporter [options]
       cmdb-exporter backfill --config <file> --from 30d --out <dir> [options]
                                (history into Prometheus blocks; backfill --help, docs/backfill.md)

Options:
${flagsHelp('daemon')}
A single CMDB can be configured by environment alone: CMDB_BASE_URL, CMDB_CLIENT_ID and
CMDB_SECRET (or CMDB_SECRET_FILE), or CMDB_TOKEN (or CMDB_TOKEN_FILE); see docs/configuration.md.
Endpoints: /metrics (?stack=NAME: one stack; ?only=exporter: the exporter's own metrics), /sd
(Prometheus HTTP service discovery, one target per stack), /healthz, /readyz, / (status page),
POST /-/reload (when enableReload is set). See docs/scaling.md.
`;

const SHUTDOWN_DEADLINE_MS = 10_000;

/** Bad flags or configuration: the message, exit 2. */
function refuse(message: string): number {
  console.error(`cmdb-exporter: ${message}`);
  return 2;
}

async function main(argv: string[], env = process.env): Promise<number> {
  if (argv[0] === 'backfill') {
    // Loaded only for this command: the daemon, --version and --check-config never load the
    // backfill's modules (nor what only the backfill needs, such as remote write's compression).
    const { runBackfill } = await import('./backfill/command.js');
    return runBackfill(argv.slice(1), { stdout: process.stdout, stderr: process.stderr, env, now: Date.now });
  }
  let flags: FlagValues<'daemon'>;
  try {
    flags = parseFlags('daemon', argv);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    return refuse(`${err.message}\nRun with --help for the options.`);
  }
  if (flags.help || flags.version) {
    process.stdout.write(flags.help ? HELP : `cmdb-exporter ${VERSION} (node ${process.version})\n`);
    return 0;
  }
  let read: Configuration;
  try {
    read = readConfiguration(flags, env);
  } catch (err) {
    if (!(err instanceof ConfigError || err instanceof FlagValueError)) throw err;
    return refuse(err.message);
  }
  if (flags['check-config']) return checkConfigReport(read, process);
  const { shard, webConfig } = read;
  const config = shard ? filterStacks(read.config, shard) : read.config;
  const defaultMetrics = !flags['web.disable-exporter-metrics'];
  const scrubber = new SecretScrubber();
  // --once prints the exposition on stdout, so its logs go to stderr.
  const logger = createLogger({ level: config.logLevel, format: config.logFormat, scrubber, destination: flags.once ? process.stderr : process.stdout });
  for (const v of read.unknownVariables) logger.warn({ variable: v.name }, `${v.name}: ${v.message}`);
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection (this is a bug; the exporter keeps running)'));
  if (flags.once) return runOnce({ config, logger, scrubber, shard, defaultMetrics }, process);

  const { 'web.telemetry-path': telemetryPath, 'web.external-url': externalUrl, 'web.max-requests': maxRequests } = read.flags;
  let app: App;
  try {
    const limits = maxRequests === undefined ? {} : { maxRequests };
    app = await start({ config, logger, scrubber, loadConfig: read.reload, shard, defaultMetrics, telemetryPath, webConfig, limits, externalUrl, openMetricsCreated: flags['web.openmetrics-created'] });
  } catch (err) {
    // --storage.path that cannot be made or written (a bad configuration), or that another running exporter holds (its lock names it).
    if (err instanceof ConfigError || err instanceof FolderInUseError) return refuse(err.message);
    const { code, message } = err as NodeJS.ErrnoException;
    if (code !== 'EADDRINUSE' && code !== 'EACCES' && code !== 'EADDRNOTAVAIL') throw err;
    logger.fatal({ listenAddress: config.listenAddress, code }, `cannot listen on ${config.listenAddress}: ${message}; choose another address with --web.listen-address`);
    return 1;
  }
  return waitForShutdown(app);
}

/** Stops the daemon on SIGTERM or SIGINT (a second signal, or the deadline passing, exits at once) and reloads it on SIGHUP. */
function waitForShutdown(app: App): Promise<number> {
  return new Promise((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) {
        app.logger.warn({ signal }, 'second signal: exiting at once');
        resolve(1);
        return;
      }
      stopping = true;
      app.logger.info({ signal }, 'shutting down');
      const force = setTimeout(() => {
        app.logger.error('shutdown deadline passed: exiting anyway');
        resolve(1);
      }, SHUTDOWN_DEADLINE_MS);
      force.unref();
      void app.close(SHUTDOWN_DEADLINE_MS / 2).then(() => {
        clearTimeout(force);
        app.logger.info('stopped');
        resolve(0);
      });
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGHUP', () => void app.reload());
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    // Let pino flush, then exit even if a socket or timer would keep the loop alive.
    setImmediate(() => process.exit(code));
  },
  (err: unknown) => {
    console.error(`cmdb-exporter: fatal: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
