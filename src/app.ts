/**
 * The composition root: builds the registry, logger, store, one client and poller per stack, the
 * scheduler and the HTTP server, and returns handles for graceful shutdown, reload and tests.
 * Nothing here is global: every call to start() is independent (tests run several at once).
 */
import { Registry } from 'prom-client';
import { CmdbClient } from './cmdb/client.js';
import { GROUPS, type DataEndpoint } from './cmdb/endpoints.js';
import { parseListenAddress } from './config/listen.js';
import { configWarnings, redactConfig } from './config/load.js';
import type { ExporterConfig, StackConfig } from './config/types.js';
import { ConfigError } from './errors.js';
import { createLogger, SecretScrubber, type Logger } from './logger.js';
import { createInstruments, initStackInstruments, registerShardInstruments, removeStackInstruments, type Instruments } from './metrics/instruments.js';
import { nodeCron, pollAllOnce, Scheduler, type CronLike } from './scheduler/scheduler.js';
import { enabledEndpoints, StackPoller } from './scheduler/stack-poller.js';
import { createHttpApp, listen, type Listening, type Readiness, type ReloadOutcome } from './server/http.js';
import type { LandingModel } from './server/landing.js';
import { UNSHARDED, type ShardAssignment } from './shard.js';
import { SnapshotStore, type EndpointSettings } from './store/snapshot-store.js';
import { VERSION } from './version.js';

export interface StartOptions {
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
  /** prom-client's process and nodejs metrics (default true). */
  readonly defaultMetrics?: boolean;
  /** This replica's share when the stacks are sharded (src/shard.ts); the config holds only its stacks. */
  readonly shard?: ShardAssignment;
}

export interface App {
  /** Base URL of the HTTP server, when serving. */
  readonly url?: string;
  readonly registry: Registry;
  readonly store: SnapshotStore;
  readonly logger: Logger;
  readiness(): Readiness;
  metricsText(): Promise<string>;
  landing(): LandingModel;
  reload(): Promise<ReloadOutcome>;
  /** Poll every endpoint of every stack once; true when every enabled endpoint succeeded. */
  pollOnce(): Promise<boolean>;
  close(graceMs?: number): Promise<void>;
}

interface Runtime {
  readonly config: StackConfig;
  readonly client: CmdbClient;
  readonly poller: StackPoller;
}

function endpointSettings(stack: StackConfig): Map<DataEndpoint, EndpointSettings> {
  const out = new Map<DataEndpoint, EndpointSettings>();
  for (const endpoint of enabledEndpoints(stack)) {
    const group = (Object.keys(GROUPS) as Array<keyof typeof GROUPS>).find((g) =>
      (GROUPS[g] as readonly DataEndpoint[]).includes(endpoint),
    );
    const intervalSeconds = group ? stack.intervals[group] : stack.intervals.inventory;
    out.set(endpoint, { intervalSeconds, staleAfterSeconds: intervalSeconds * stack.staleIntervals });
  }
  return out;
}

export async function start(opts: StartOptions): Promise<App> {
  let config = opts.config;
  const scrubber = opts.scrubber ?? new SecretScrubber();
  const logger = opts.logger ?? createLogger({ level: config.logLevel, format: config.logFormat, scrubber });
  const registry = opts.registry ?? new Registry();
  const instruments: Instruments = createInstruments(registry, { defaultMetrics: opts.defaultMetrics });
  const nowMs = opts.nowMs ?? Date.now;
  const now = () => nowMs() / 1000;
  instruments.reloadSuccessTimestamp.set(now());
  const store = new SnapshotStore({ instruments, logger });
  const scheduler = new Scheduler({
    instruments,
    logger,
    cron: opts.cron ?? nodeCron(logger),
    initialJitterMs: opts.initialJitterMs,
    nowMs,
  });
  const runtimes = new Map<string, Runtime>();
  registerShardInstruments(registry, opts.shard ?? UNSHARDED, () => runtimes.size);
  const scheduling = opts.schedule !== false;

  const addStack = (stack: StackConfig) => {
    if (stack.auth.kind === 'client') scrubber.add(stack.auth.secret);
    else scrubber.add(stack.auth.token);
    const stackLogger = logger.child({ stack: stack.name });
    const client = new CmdbClient({ stack, instruments, logger: stackLogger, scrubber });
    store.addStack(stack.name, endpointSettings(stack), stack.maxSeries);
    const poller = new StackPoller({ stack, api: client, store, logger: stackLogger, scrubber, now });
    initStackInstruments(instruments, stack.name, poller.groups(), enabledEndpoints(stack));
    runtimes.set(stack.name, { config: stack, client, poller });
    if (scheduling) scheduler.add(poller);
  };

  const removeStack = async (name: string, graceMs?: number) => {
    const runtime = runtimes.get(name);
    if (!runtime) return;
    runtimes.delete(name);
    await scheduler.remove(name, graceMs);
    await runtime.client.close();
    store.removeStack(name);
    removeStackInstruments(instruments, name);
  };

  logger.info({ version: VERSION, shard: opts.shard, config: redactConfig(config) }, 'cmdb-exporter starting');
  for (const w of configWarnings(config)) logger.warn({ stack: w.stack, key: w.key }, w.message);
  for (const stack of config.stacks) addStack(stack);

  const readiness = (): Readiness => {
    const pending: Array<{ stack: string; endpoint: string }> = [];
    for (const r of runtimes.values()) for (const endpoint of r.poller.runner.pending()) pending.push({ stack: r.config.name, endpoint });
    return { ready: pending.length === 0, pending };
  };

  const metricsText = async () => store.text(now()) + (await registry.metrics());

  const landing = (): LandingModel => ({
    version: VERSION,
    ready: readiness().ready,
    now: now(),
    stacks: [...runtimes.values()].map((r) => ({
      name: r.config.name,
      baseUrl: r.config.baseUrl,
      unauthorized: r.client.unauthorized,
      endpoints: r.poller.runner.status(),
    })),
  });

  let reloading: Promise<ReloadOutcome> = Promise.resolve({ ok: true, message: '' });
  const reload = (): Promise<ReloadOutcome> => {
    reloading = reloading.then(async () => {
      if (!opts.loadConfig) return { ok: false, message: 'reload is not available: the exporter was started without a config source' };
      let next: ExporterConfig;
      try {
        next = opts.loadConfig();
      } catch (err) {
        instruments.reloadSuccessful.set(0);
        const message = err instanceof ConfigError ? err.message : String(err);
        logger.error({ issues: err instanceof ConfigError ? err.issues : undefined }, 'configuration reload rejected; the previous configuration stays in force');
        return { ok: false, message };
      }
      const summary = await applyConfig(next);
      config = next;
      instruments.reloadSuccessful.set(1);
      instruments.reloadSuccessTimestamp.set(now());
      logger.info({ ...summary, config: redactConfig(next) }, 'configuration reloaded');
      return { ok: true, message: `configuration reloaded: ${JSON.stringify(summary)}` };
    });
    return reloading;
  };

  const applyConfig = async (next: ExporterConfig) => {
    const wanted = new Map(next.stacks.map((s) => [s.name, s]));
    const summary = { unchanged: 0, restarted: 0, added: 0, removed: 0 };
    for (const [name, r] of [...runtimes]) {
      const w = wanted.get(name);
      if (!w) summary.removed++;
      else if (JSON.stringify(w) !== JSON.stringify(r.config)) summary.restarted++;
      else continue;
      await removeStack(name);
    }
    for (const stack of next.stacks) {
      if (runtimes.has(stack.name)) summary.unchanged++;
      else {
        if (!config.stacks.some((s) => s.name === stack.name)) summary.added++;
        addStack(stack);
      }
    }
    logger.level = next.logLevel;
    if (next.listenAddress !== config.listenAddress) {
      logger.warn({ listenAddress: next.listenAddress }, 'listenAddress changed: it takes effect at the next restart');
    }
    return summary;
  };

  const pollOnce = async () => {
    await Promise.all([...runtimes.values()].map((r) => pollAllOnce(r.poller)));
    return [...runtimes.values()].every((r) => r.poller.runner.status().every((s) => s.state === 'ok'));
  };

  let server: Listening | undefined;
  if (opts.serve !== false) {
    const http = createHttpApp({
      metricsText,
      readiness,
      landing,
      reload: config.enableReload ? reload : undefined,
      logger,
    });
    const { host, port } = parseListenAddress(config.listenAddress, 'listenAddress');
    server = await listen(http, host, port);
    logger.info({ url: server.url, stacks: config.stacks.map((s) => s.name) }, `listening on ${server.url}`);
  }

  let closing: Promise<void> | undefined;
  const close = (graceMs = 5000) =>
    (closing ??= (async () => {
      await server?.close();
      await Promise.all([...runtimes.keys()].map((name) => removeStack(name, graceMs)));
      await scheduler.stop(0);
    })());

  return { url: server?.url, registry, store, logger, readiness, metricsText, landing, reload, pollOnce, close };
}
