#!/usr/bin/env node
/**
 * Command line: parses flags, loads the configuration, and starts the daemon (src/app.ts).
 * Exit codes: 0 ok; 1 runtime failure (or --once with a failed endpoint, or a saved query refused or failed); 2 bad flags or configuration.
 */
import { start, type App } from './app.js';
import { FlagError, flagsHelp, parseFlags, type FlagValues } from './config/flags.js';
import { configWarnings, loadConfig, unknownVariables } from './config/load.js';
import type { ExporterConfig } from './config/types.js';
import { loadWebConfig, type WebConfig } from './config/web-config.js';
import { ConfigError, FolderInUseError } from './errors.js';
import { createLogger } from './logger.js';
import { onceSummary, uncountedQueries } from './once.js';
import { SecretScrubber } from './secrets.js';
import { DEFAULT_MAX_REQUESTS } from './server/limits.js';
import { parseExternalUrl, type ScrapeBase } from './server/sd.js';
import { filterStacks, parseShardOptions, type ShardAssignment } from './shard.js';
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

async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'backfill') {
    // Loaded only for this command: the daemon, --version and --check-config never load the
    // backfill's modules (nor what only the backfill needs, such as remote write's compression).
    const { runBackfill } = await import('./backfill/command.js');
    return runBackfill(argv.slice(1), { stdout: process.stdout, stderr: process.stderr, env: process.env, now: Date.now });
  }
  let flags: FlagValues<'daemon'>;
  try {
    flags = parseFlags('daemon', argv);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    console.error(`cmdb-exporter: ${err.message}\nRun with --help for the options.`);
    return 2;
  }
  if (flags.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (flags.version) {
    process.stdout.write(`cmdb-exporter ${VERSION} (node ${process.version})\n`);
    return 0;
  }

  const telemetryPath = flags['web.telemetry-path'];
  if (telemetryPath !== undefined && !/^\/[\w\-./]*$/.test(telemetryPath)) {
    console.error(`cmdb-exporter: --web.telemetry-path must be a path starting with /, got ${JSON.stringify(telemetryPath)}`);
    return 2;
  }
  const maxRequestsText = flags['web.max-requests'];
  // Digits only: Number() would read an empty value as 0 (no limit) and 0x10 as 16.
  const maxRequests = maxRequestsText === undefined ? DEFAULT_MAX_REQUESTS : /^\d{1,6}$/.test(maxRequestsText) ? Number(maxRequestsText) : Number.NaN;
  if (!Number.isInteger(maxRequests) || maxRequests < 0 || maxRequests > 100_000) {
    console.error(`cmdb-exporter: --web.max-requests must be a whole number from 0 (no limit) to 100000, got ${JSON.stringify(maxRequestsText)}`);
    return 2;
  }
  const externalUrlText = flags['web.external-url'] ?? (process.env.EXPORTER_WEB_EXTERNAL_URL || undefined);
  let externalUrl: ScrapeBase | undefined;
  try {
    const name = flags['web.external-url'] !== undefined ? '--web.external-url' : 'EXPORTER_WEB_EXTERNAL_URL';
    externalUrl = externalUrlText === undefined ? undefined : parseExternalUrl(externalUrlText, name);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`cmdb-exporter: ${err.message}`);
    return 2;
  }
  const webConfigFile = flags['web.config.file'] ?? (process.env.EXPORTER_WEB_CONFIG_FILE || undefined);
  const configFile = flags.config ?? process.env.EXPORTER_CONFIG ?? undefined;
  const loadAll = () =>
    loadConfig({
      configFile,
      env: process.env,
      overrides: { listenAddress: flags['web.listen-address'], logLevel: flags['log.level'], logFormat: flags['log.format'], storagePath: flags['storage.path'] },
    });
  let shard: ShardAssignment | undefined;
  // Sharding wraps the loader, so a reload (SIGHUP, POST /-/reload) keeps only this shard's stacks too.
  const load = () => (shard ? filterStacks(loadAll(), shard) : loadAll());
  let config: ExporterConfig;
  let webConfig: WebConfig | undefined;
  try {
    webConfig = webConfigFile === undefined ? undefined : loadWebConfig(webConfigFile);
    shard = parseShardOptions(
      { shard: flags.shard, totalShards: flags['total-shards'], fromPodName: flags['shard-from-pod-name'] },
      process.env,
    );
    config = loadAll();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`cmdb-exporter: ${err.message}`);
    return 2;
  }
  const unknownVars = unknownVariables(process.env, config.fileVariables);
  if (flags['check-config']) {
    for (const v of unknownVars) console.error(`cmdb-exporter: warning: ${v.name}: ${v.message}`);
    for (const w of configWarnings(config)) console.error(`cmdb-exporter: warning: stack ${w.stack}: ${w.message}`);
    const names = config.stacks.map((s) => s.name).join(', ');
    process.stdout.write(`configuration OK: ${config.stacks.length} stack(s) (${names}); listen ${config.listenAddress}\n`);
    if (webConfig) process.stdout.write(`web config OK: ${webConfig.tls ? 'TLS' : 'no TLS'}, ${webConfig.basicAuthUsers.size} basic auth user(s)\n`);
    const queries = config.stacks.reduce((n, s) => n + s.queries.length, 0);
    if (queries > 0) {
      process.stdout.write(
        `saved queries OK without the CMDB: ${queries} (shape, operators, value kinds, relative days); field names and types are checked against each stack's field metadata before each run\n`,
      );
    }
    if (shard) {
      const mine = filterStacks(config, shard).stacks.map((s) => s.name);
      process.stdout.write(`shard ${shard.shard} of ${shard.total} (from ${shard.source}) polls ${mine.length}: ${mine.join(', ')}\n`);
    }
    return 0;
  }
  if (shard) config = filterStacks(config, shard);

  const defaultMetrics = !flags['web.disable-exporter-metrics'];
  const scrubber = new SecretScrubber();
  // --once prints the exposition on stdout, so its logs go to stderr.
  const logger = createLogger({
    level: config.logLevel,
    format: config.logFormat,
    scrubber,
    destination: flags.once ? process.stderr : process.stdout,
  });
  for (const v of unknownVars) logger.warn({ variable: v.name }, `${v.name}: ${v.message}`);
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled rejection (this is a bug; the exporter keeps running)'));

  if (flags.once) {
    // One poll, printed: nothing to keep, and a state directory shared with a daemon is not touched.
    const began = performance.now();
    const app = await start({ config: { ...config, storagePath: undefined }, logger, scrubber, serve: false, schedule: false, shard, defaultMetrics });
    const endpointsOk = await app.pollOnce();
    process.stdout.write(await app.metricsText());
    const { stacks } = app.landing();
    const summary = onceSummary(stacks, (performance.now() - began) / 1000);
    const uncounted = uncountedQueries(stacks);
    const queriesOk = uncounted.refused.length === 0 && uncounted.failed.length === 0;
    await app.close(0);
    if (!endpointsOk) logger.error('at least one endpoint failed; see the log lines above and cmdb_endpoint_up');
    if (!queriesOk) logger.error('at least one saved query was refused or failed; see the log lines above and cmdb_query_last_run_success');
    // One line for people, after the log (stderr: stdout is the exposition).
    process.stderr.write(`${summary}\n`);
    return endpointsOk && queriesOk ? 0 : 1;
  }

  let app: App;
  try {
    const openMetricsCreated = flags['web.openmetrics-created'];
    app = await start({ config, logger, scrubber, loadConfig: load, shard, defaultMetrics, telemetryPath, webConfig, limits: { maxRequests }, externalUrl, openMetricsCreated });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (err instanceof ConfigError || err instanceof FolderInUseError) {
      // --storage.path that cannot be made or written (a bad configuration), or that another
      // running exporter holds (its lock names it): named in the message.
      console.error(`cmdb-exporter: ${err.message}`);
      return 2;
    }
    if (e.code === 'EADDRINUSE' || e.code === 'EACCES' || e.code === 'EADDRNOTAVAIL') {
      logger.fatal({ listenAddress: config.listenAddress, code: e.code }, `cannot listen on ${config.listenAddress}: ${e.message}; choose another address with --web.listen-address`);
      return 1;
    }
    throw err;
  }
  return waitForShutdown(app);
}

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
    process.on('SIGHUP', () => {
      void app.reload();
    });
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
