/**
 * The configuration as the daemon reads it at start: the flags' values checked (src/config/flags.ts),
 * the web config, this replica's shard and the configuration itself; and --check-config's report of
 * it. One reading for both, so that --check-config checks exactly what a start would load. Warnings
 * go to stderr (variables the exporter does not read, values that are valid but likely wrong, such
 * as the example's baseUrl), then what was found to stdout.
 */
import type { Env } from './config/env.js';
import { checkFlags, type CheckedFlags, type FlagValues } from './config/flags.js';
import { configWarnings, loadConfig, unknownVariables } from './config/load.js';
import type { ExporterConfig } from './config/types.js';
import { loadWebConfig, type WebConfig } from './config/web-config.js';
import { filterStacks, parseShardOptions, type ShardAssignment } from './shard.js';

export interface Configuration {
  readonly flags: CheckedFlags<'daemon'>;
  /** Every configured stack (before sharding: the report says which this shard polls). */
  readonly config: ExporterConfig;
  /** Reads the configuration again (a reload): with sharding, only this shard's stacks. */
  readonly reload: () => ExporterConfig;
  readonly webConfig: WebConfig | undefined;
  readonly shard: ShardAssignment | undefined;
  /** CMDB_* and EXPORTER_* variables the exporter does not read (likely typos). */
  readonly unknownVariables: ReadonlyArray<{ readonly name: string; readonly message: string }>;
}

/** Throws FlagValueError or ConfigError naming the flag, variable or key (exit 2). */
export function readConfiguration(flags: FlagValues<'daemon'>, env: Env): Configuration {
  const checked = checkFlags('daemon', flags, env);
  const webConfigFile = checked['web.config.file'];
  const webConfig = webConfigFile === undefined ? undefined : loadWebConfig(webConfigFile);
  const shard = parseShardOptions({ shard: flags.shard, totalShards: flags['total-shards'], fromPodName: flags['shard-from-pod-name'] }, env);
  const overrides = { listenAddress: flags['web.listen-address'], logLevel: flags['log.level'], logFormat: flags['log.format'], storagePath: flags['storage.path'] };
  const load = () => loadConfig({ configFile: flags.config, env, overrides });
  const config = load();
  // Sharding wraps the loader, so a reload (SIGHUP, POST /-/reload) keeps only this shard's stacks too.
  const reload = () => (shard ? filterStacks(load(), shard) : load());
  return { flags: checked, config, reload, webConfig, shard, unknownVariables: unknownVariables(env, config.fileVariables) };
}

/** --check-config (--config.check): writes the report; the exit code is 0. */
export function checkConfigReport(read: Configuration, io: { readonly stdout: NodeJS.WritableStream; readonly stderr: NodeJS.WritableStream }): number {
  const { config, webConfig, shard } = read;
  for (const v of read.unknownVariables) io.stderr.write(`cmdb-exporter: warning: ${v.name}: ${v.message}\n`);
  for (const w of configWarnings(config)) io.stderr.write(`cmdb-exporter: warning: stack ${w.stack}: ${w.message}\n`);
  const names = config.stacks.map((s) => s.name).join(', ');
  io.stdout.write(`configuration OK: ${config.stacks.length} stack(s) (${names}); listen ${config.listenAddress}\n`);
  if (webConfig) io.stdout.write(`web config OK: ${webConfig.tls ? 'TLS' : 'no TLS'}, ${webConfig.basicAuthUsers.size} basic auth user(s)\n`);
  const queries = config.stacks.reduce((n, s) => n + s.queries.length, 0);
  if (queries > 0) {
    io.stdout.write(
      `saved queries OK without the CMDB: ${queries} (shape, operators, value kinds, relative days); field names and types are checked against each stack's field metadata before each run\n`,
    );
  }
  if (shard) {
    const mine = filterStacks(config, shard).stacks.map((s) => s.name);
    io.stdout.write(`shard ${shard.shard} of ${shard.total} (from ${shard.source}) polls ${mine.length}: ${mine.join(', ')}\n`);
  }
  return 0;
}
