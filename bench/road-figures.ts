/**
 * `npx tsx bench/road-figures.ts pause|reload`: the figures of issue 25 ("one road to the CMDB"),
 * measured the same way on any version of the exporter, in real time against the simulator on
 * loopback, at the default settings unless said otherwise; prints one JSON line.
 *
 * - `pause` (300 s): /license answers 503 with `Retry-After: 60` for good; connectors every minute,
 *   a history of 10,000 runs at the real pace (20 ms a row: 40 s a 2,000-row page). Requests in the
 *   300 s, per endpoint; the silences of the whole stack (gaps of 20 s or more between requests);
 *   connector pages read and whether a full scan completed; what the status page says of the pause.
 * - `reload` (up to 400 s): a history of 3,000 runs at the real pace; 45 s after start a reload
 *   changes maxConcurrency (not an interval); seconds from start until the connector series are
 *   served, and how often page 0 of the history was asked.
 */
import { start, type App } from '../src/app.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { ExporterConfig, StackConfig } from '../src/config/types.js';
import { renderLanding } from '../src/server/landing.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { quietParts, simulatorStack } from './stack.js';

const mode = process.argv[2];
if (mode !== 'pause' && mode !== 'reload') {
  console.error('usage: npx tsx bench/road-figures.ts pause|reload');
  process.exit(2);
}

const stackOf = (sim: SimulatorServer, extra: Partial<StackConfig> = {}) => simulatorStack(sim, { name: 'road', ...extra });

const configOf = (stack: StackConfig): ExporterConfig => ({ listenAddress: '127.0.0.1:0', logLevel: 'silent', logFormat: 'json', enableReload: true, stacks: [stack] });

async function exporter(config: () => ExporterConfig): Promise<App> {
  const { logger, scrubber } = quietParts();
  return start({ config: config(), loadConfig: config, logger, scrubber, serve: false, defaultMetrics: false, initialJitterMs: 100 });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pageOf = (rawQuery: string) => new URLSearchParams(rawQuery).get('page');

async function pause(): Promise<unknown> {
  const sim = await startSimulator({ live: true, connectorPeriodSeconds: 86_400, size: { connectors: 50, profilesPerConnector: 2, runsPerConnector: 100 }, connectorPace: { msPerRow: 20 } });
  sim.addFault({ endpoint: 'license', status: 503, retryAfterSeconds: 60 });
  const stack = stackOf(sim, { intervals: { ...BUILTIN_SETTINGS.intervals, connectors: 60 } });
  const app = await exporter(() => configOf(stack));
  const t0 = Date.now();
  let pausedText: string | undefined;
  try {
    while (Date.now() - t0 < 300_000) {
      await sleep(2000);
      const html = renderLanding(app.landing());
      pausedText ??= /(every request|[a-z]+ requests) paused by [^<,]*/.exec(html)?.[0];
    }
    const log = sim.requests().filter((r) => r.endpoint !== null && r.at <= t0 + 300_000);
    const at = log.map((r) => r.at).sort((a, b) => a - b);
    const silences: string[] = [];
    for (let i = 1; i < at.length; i++) {
      const gap = (at[i] as number) - (at[i - 1] as number);
      if (gap >= 20_000) silences.push(`${Math.round(((at[i - 1] as number) - t0) / 1000)}→${Math.round(((at[i] as number) - t0) / 1000)} s`);
    }
    const per: Record<string, number> = {};
    for (const r of log) per[r.endpoint as string] = (per[r.endpoint as string] ?? 0) + 1;
    const text = await app.metricsText();
    return {
      mode,
      requests: log.length,
      perEndpoint: per,
      silences,
      connectorPages: log.filter((r) => r.endpoint === 'connector' && r.status === 200).length,
      fullScansCompleted: Number(/^cmdb_connector_scans_total\{stack="road",kind="full"\} (\S+)$/m.exec(text)?.[1] ?? 0),
      connectorUp: /^cmdb_endpoint_up\{stack="road",endpoint="connector"\} 1$/m.test(text),
      dataIngestionUp: /^cmdb_endpoint_up\{stack="road",endpoint="data_ingestion"\} 1$/m.test(text),
      statusPage: pausedText,
    };
  } finally {
    await app.close(0);
    await sim.close();
  }
}

async function reload(): Promise<unknown> {
  const sim = await startSimulator({ live: true, connectorPeriodSeconds: 86_400, size: { connectors: 30, profilesPerConnector: 2, runsPerConnector: 50 }, connectorPace: { msPerRow: 20 } });
  let stack = stackOf(sim);
  const app = await exporter(() => configOf(stack));
  const t0 = Date.now();
  let dataAt: number | undefined;
  let reloaded: unknown;
  try {
    while (dataAt === undefined && Date.now() - t0 < 400_000) {
      await sleep(1000);
      if (reloaded === undefined && Date.now() - t0 >= 45_000) {
        stack = { ...stack, maxConcurrency: stack.maxConcurrency + 1 };
        reloaded = (await app.reload()).message;
      }
      if ((await app.metricsText()).includes('cmdb_connector_info{')) dataAt = (Date.now() - t0) / 1000;
    }
    const connector = sim.requests().filter((r) => r.endpoint === 'connector');
    return {
      mode,
      rows: sim.state().counts.connectorRuns,
      connectorDataSeconds: dataAt,
      reload: reloaded,
      page0Asked: connector.filter((r) => pageOf(r.rawQuery) === '0').length,
      connectorRequests: connector.map((r) => `${pageOf(r.rawQuery)}/${new URLSearchParams(r.rawQuery).get('size')}:${r.status}`),
    };
  } finally {
    await app.close(0);
    await sim.close();
  }
}

console.log(JSON.stringify(mode === 'pause' ? await pause() : await reload()));
