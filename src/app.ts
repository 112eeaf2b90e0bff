/**
 * The composition root: builds the registry, logger, store, scheduler, the stacks (src/stacks.ts)
 * and the HTTP server, and returns handles for graceful shutdown, reload and tests.
 * Nothing here is global: every call to start() is independent (tests run several at once).
 */
import { Registry } from 'prom-client';
import { configWarnings, parseListenAddress, redactConfig } from './config/load.js';
import { registerSecrets } from './config/redact.js';
import type { ExporterConfig } from './config/types.js';
import { ConfigError } from './errors.js';
import { createLogger, type Logger } from './logger.js';
import { SecretScrubber } from './secrets.js';
import { windowedEventLoopDelay } from './event-loop.js';
import { createInstruments, createStateInstruments, registerShardInstruments, type Instruments, type SelfRegistries } from './metrics/instruments.js';
import type { CronLike } from './scheduler/scheduler.js';
import type { WebConfig } from './config/web-config.js';
import { REFUSAL_REASONS } from './server/auth.js';
import { createHttpApp, listen, metricsHandler, type Listening, type PerStackMetrics, type Readiness, type ReloadOutcome } from './server/http.js';
import { defaultLimits, type ServerLimits } from './server/limits.js';
import { buildProtection } from './server/protection.js';
import { DocsPages } from './server/docs.js';
import type { LandingModel } from './server/landing.js';
import { UNSHARDED, type ShardAssignment } from './shard.js';
import { listenBase, type ScrapeBase } from './config/scrape-base.js';
import { targetGroups } from './server/sd.js';
import { Exposition } from './exposition/exposition.js';
import { MetricsFormats, type BodyKind } from './exposition/formats.js';
import type { ScrapeResponse } from './exposition/responses.js';
import { StartTimes } from './exposition/start-times.js';
import { TEXT_LINES } from './exposition/text-lines.js';
import { SnapshotStore } from './store/snapshot-store.js';
import { Stacks, type ApplySummary, type StacksOptions } from './stacks.js';
import { Storage } from './persist/storage.js';
import { VERSION } from './version.js';

export interface StartOptions extends Pick<StacksOptions, 'onRoad'> {
  readonly config: ExporterConfig;
  /** Re-reads the configuration for SIGHUP and POST /-/reload; without it reload is refused. */
  readonly loadConfig?: () => ExporterConfig;
  readonly logger?: Logger;
  readonly scrubber?: SecretScrubber;
  readonly registry?: Registry;
  readonly cron?: CronLike;
  /** Clock in ms (tests use a fixed one). */
  readonly nowMs?: () => number;
  /** Serve HTTP (default true; --once does not). */
  readonly serve?: boolean;
  /** Start the scheduler (default true; --once polls by hand). */
  readonly schedule?: boolean;
  readonly initialJitterMs?: number;
  /** prom-client's process and nodejs metrics (default true; --web.disable-exporter-metrics). */
  readonly defaultMetrics?: boolean;
  /** Path of the exposition (--web.telemetry-path), default /metrics. */
  readonly telemetryPath?: string;
  /** This replica's share when the stacks are sharded (src/shard.ts); the config holds only its stacks. */
  readonly shard?: ShardAssignment;
  /** TLS, basic auth and headers of the HTTP server (--web.config.file); plain and open when absent. */
  readonly webConfig?: WebConfig;
  /** Bounds of the HTTP server; defaults from src/server/limits.ts (--web.max-requests sets maxRequests). */
  readonly limits?: Partial<ServerLimits>;
  /** Where Prometheus reaches this exporter (--web.external-url), for GET /sd; the listen address when absent. */
  readonly externalUrl?: ScrapeBase;
  /** OpenMetrics `_created` lines (--web.openmetrics-created). */
  readonly openMetricsCreated?: boolean;
}

export interface App {
  /** Base URL of the HTTP server, when serving. */
  readonly url?: string;
  /** The exporter's own metrics: a registry per stack and one without a `stack` label. */
  readonly registries: SelfRegistries;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readiness(): Readiness;
  metricsText(): Promise<string>;
  /** The /metrics response as served (both encodings, made once per change). */
  metrics(kind?: BodyKind): Promise<ScrapeResponse>;
  landing(): LandingModel;
  reload(): Promise<ReloadOutcome>;
  /** With --storage.path: writes a stack's state now (the benchmark and tests); undefined without. */
  writeState?(stack: string): Promise<{ bytes: number; seconds: number } | undefined>;
  /** Poll every endpoint of every stack once; true when every enabled endpoint succeeded. */
  pollOnce(): Promise<boolean>;
  close(graceMs?: number): Promise<void>;
}

export async function start(opts: StartOptions): Promise<App> {
  let config = opts.config;
  const scrubber = opts.scrubber ?? new SecretScrubber();
  const logger = opts.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, scrubber });
  const registry = opts.registry ?? new Registry();
  const instruments: Instruments = createInstruments(registry, { defaultMetrics: opts.defaultMetrics });
  // prom-client's event-loop delay figures read an empty window at a second scrape of the same moment.
  if (opts.defaultMetrics !== false) windowedEventLoopDelay(registry);
  const nowMs = opts.nowMs ?? Date.now;
  const now = () => nowMs() / 1000;
  instruments.reloadSuccessTimestamp.set(now());
  // cmdb_exporter_stacks reads the stacks' count at scrape time.
  registerShardInstruments(instruments.registries.exporter, opts.shard ?? UNSHARDED, () => stacks.count);
  const store = new SnapshotStore({ instruments, logger, now, renderer: TEXT_LINES });
  const exposition = new Exposition(store);
  // Where a configuration is read, before anything of it is logged or used: a secret pasted into
  // another key is scrubbed from the first line on.
  registerSecrets(config, scrubber);
  // --storage.path (src/persist/); --once starts without it (src/once.ts).
  const storage =
    config.storagePath === undefined
      ? undefined
      : await Storage.open({ dir: config.storagePath, logger, now, instruments: createStateInstruments(instruments, () => store.restoredAges(now())) });
  // One short line at info; the whole effective configuration (a few kB for one stack) at debug.
  logger.info({ version: VERSION, shard: opts.shard, stacks: config.stacks.length }, 'cmdb-exporter starting');
  logger.debug({ config: redactConfig(config) }, 'effective configuration (secrets redacted)');
  for (const w of configWarnings(config)) logger.warn({ stack: w.stack, key: w.key }, w.message);
  // Every counter and histogram series' start (`_created`): this process's, as its counts are.
  const starts = new StartTimes(now);
  const stacks = new Stacks({
    starts,
    instruments,
    store,
    logger,
    scrubber,
    schedule: opts.schedule === false ? undefined : { cron: opts.cron, initialJitterMs: opts.initialJitterMs },
    now,
    nowMs,
    storage,
    ...(opts.onRoad ? { onRoad: opts.onRoad } : {}),
  });

  const readiness = () => stacks.readiness();
  // Every format's whole exposition and per-stack ones, each body made and gzipped once per change.
  const formats = new MetricsFormats({ exposition, registries: instruments.registries, now, starts, openMetricsCreated: opts.openMetricsCreated });
  const perStack: PerStackMetrics = formats;
  // The very bytes /metrics serves (plain), as text: for --once, the golden file and the benchmark.
  const metrics = (kind?: BodyKind) => formats.whole(kind);
  const metricsText = async () => Buffer.concat((await metrics()).plain.parts).toString('utf8');
  /** The newest reload when it was rejected, shown at the top of the status page until a good one. */
  let rejectedReload: { at: number; message: string } | undefined;
  const landing = (): LandingModel => ({
    version: VERSION,
    ready: readiness().ready,
    now: now(),
    stacks: stacks.landing(),
    ...(rejectedReload ? { rejectedReload } : {}),
    ...(config.runbookBaseUrl === undefined ? {} : { runbookBase: config.runbookBaseUrl }),
  });

  let reloading: Promise<ReloadOutcome> = Promise.resolve({ ok: true, message: '' });
  const reload = (): Promise<ReloadOutcome> => {
    // Each reload runs after the previous one, whatever became of it: a rejected link would skip
    // every later reload (the attempt below never throws, the catch is a second guard).
    reloading = reloading.catch(() => undefined).then(async () => {
      if (!opts.loadConfig) return { ok: false, message: 'reload is not available: the exporter was started without a config source' };
      let next: ExporterConfig;
      try {
        next = opts.loadConfig();
        registerSecrets(next, scrubber);
      } catch (err) {
        instruments.reloadSuccessful.set(0);
        const message = err instanceof ConfigError ? err.message : String(err);
        rejectedReload = { at: now(), message: scrubber.scrub(message) };
        logger.error({ issues: err instanceof ConfigError ? err.issues : undefined }, 'configuration reload rejected; the previous configuration stays in force');
        return { ok: false, message };
      }
      let summary: ApplySummary;
      try {
        summary = await applyConfig(next);
      } catch (err) {
        // Applying failed part-way: what was applied stays, and the operator must hear of it.
        instruments.reloadSuccessful.set(0);
        const message = `configuration reload failed while it was applied: ${scrubber.scrub(err instanceof Error ? err.message : String(err))}`;
        // The status page shows it at the top too, as it does a rejected file, until the next good reload.
        rejectedReload = { at: now(), message };
        logger.error({ err: scrubber.scrub(err instanceof Error ? (err.stack ?? err.message) : String(err)) }, `${message}; fix the configuration and reload again`);
        return { ok: false, message };
      }
      config = next;
      rejectedReload = undefined;
      instruments.reloadSuccessful.set(1);
      instruments.reloadSuccessTimestamp.set(now());
      logger.info({ ...summary, config: redactConfig(next) }, 'configuration reloaded');
      return { ok: true, message: `configuration reloaded: ${JSON.stringify(summary)}` };
    });
    // The reload's own gauges (cmdb_config_last_reload_*) show on the next scrape, not up to 1 s later.
    const changed = () => formats.selfMetricsChanged();
    void reloading.then(changed, changed);
    return reloading;
  };

  const applyConfig = async (next: ExporterConfig) => {
    const summary = await stacks.apply(next, config);
    logger.level = next.logLevel;
    if (next.listenAddress !== config.listenAddress) {
      logger.warn({ listenAddress: next.listenAddress }, 'listenAddress changed: it takes effect at the next restart');
    }
    if (next.storagePath !== config.storagePath) {
      logger.warn({ storagePath: next.storagePath }, 'storagePath changed: it takes effect at the next restart');
    }
    return summary;
  };

  // Each stack starts from what an earlier process kept (--storage.path); its restored series are
  // served whole from the first scrape (awaited below, before the server listens). Nothing polls
  // yet: the stacks start polling, and the state is written, once the server listens; a step that
  // fails before lets go of everything opened so far (the folder's lock included) and sent nothing.
  let server: Listening | undefined;
  try {
    const restoring: Array<Promise<void>> = [];
    for (const stack of config.stacks) restoring.push(stacks.add(stack));
    await Promise.all(restoring);
    // Every reason from 0, so rate() works from the first scrape (and --once shows the family too).
    for (const reason of REFUSAL_REASONS) instruments.httpRefused.inc({ reason }, 0);
    if (opts.serve !== false) {
      const protection = buildProtection({
        web: opts.webConfig,
        limits: { ...defaultLimits(), ...opts.limits },
        refused: (reason) => instruments.httpRefused.inc({ reason }),
        logger,
        telemetryPath: opts.telemetryPath,
      });
      let sdBase: ScrapeBase | undefined = opts.externalUrl;
      const telemetryPath = opts.telemetryPath ?? '/metrics';
      const http = createHttpApp({
        metrics,
        perStack,
        sd: () => (sdBase ? targetGroups(store.stackNames(), sdBase, telemetryPath) : []),
        readiness,
        landing,
        reload: config.enableReload ? reload : undefined,
        logger,
        telemetryPath: opts.telemetryPath,
        docs: new DocsPages(),
      });
      const { host, port } = parseListenAddress(config.listenAddress, 'listenAddress');
      const metricsRoute = { path: telemetryPath, handler: metricsHandler(metrics, perStack), logger };
      server = await listen(http, host, port, { protection, metrics: metricsRoute });
      sdBase ??= listenBase(host, (server.server.address() as { port: number }).port, protection.tls !== undefined);
      const { maxRequests, maxConnections } = protection.limits;
      const web = { tls: protection.tls !== undefined, basicAuth: protection.auth !== undefined, maxRequests, maxConnections };
      logger.info({ url: server.url, stacks: config.stacks.map((s) => s.name), web }, `listening on ${server.url}`);
    }
  } catch (err) {
    await server?.close();
    await stacks.closeAll(0);
    storage?.release();
    store.close();
    exposition.close();
    formats.close();
    throw err;
  }
  storage?.start(
    { stacks: () => stacks.configs(), marks: (s) => stacks.stateMarks(s), settled: (s) => store.settledOf(s), prepare: (s) => stacks.prepareState(s), parts: (s) => stacks.stateParts(s) },
    () => stacks.sendTimes(),
  );
  if (config.storagePath !== undefined && storage) logger.info({ storagePath: config.storagePath }, 'keeping state across restarts');
  stacks.startPolling();

  let closing: Promise<void> | undefined;
  const close = (graceMs = 5000) =>
    (closing ??= (async () => {
      await server?.close();
      // Polls end first, the runtimes stay: what they know is written, then they are closed.
      await stacks.stopPolling(graceMs);
      await storage?.close();
      await stacks.closeAll(graceMs);
      store.close();
      exposition.close();
      formats.close();
    })());

  const pollOnce = () => stacks.pollOnce();
  const writeState = storage && ((stack: string) => storage.writeNow(stack));
  return { url: server?.url, registries: instruments.registries, store, logger, readiness, metricsText, metrics, landing, reload, pollOnce, close, ...(writeState ? { writeState } : {}) };
}
