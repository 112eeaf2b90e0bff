/**
 * `npm run demo`: the embedded CMDB simulator (live data) and the exporter, together on loopback,
 * and a Prometheus (the pinned part, scripts/parts) with the shipped rules (scripts/demo-prometheus.ts)
 * so that an alert can be seen firing, and an Alertmanager (pinned too) with the shipped routing,
 * grouping and inhibition (scripts/demo-alertmanager.ts) whose notifications the demo prints here.
 * Prints the URLs to open (every one answers: where Prometheus or Alertmanager serves no web UI, as
 * Debian's packages of the current versions do, their HTTP API's), the problems the simulated data
 * has on purpose, and commands that break something. Ctrl-C (or SIGTERM) stops everything; SIGHUP reloads the exporter's
 * configuration as the daemon does; an error stops everything too: no child outlives the demo.
 * Ports: 8080 for the simulator, 9873 for the exporter, 9090 for Prometheus and 9093 for
 * Alertmanager, or free ones when those are taken (override with DEMO_SIMULATOR_PORT /
 * DEMO_EXPORTER_PORT / DEMO_PROMETHEUS_PORT / DEMO_ALERTMANAGER_PORT). `--no-prometheus` leaves
 * Prometheus and Alertmanager out, `--no-alertmanager` Alertmanager alone.
 */
import { fileURLToPath } from 'node:url';
import { start, type App } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import type { ExporterConfig } from '../src/config/types.js';
import { ConfigError } from '../src/errors.js';
import { attention } from '../src/server/attention.js';
import { JOB_FAILURE_CHANCE } from '../src/simulator/data/actions.js';
import { INGESTION_PERIOD_MS, RUN_FAILURE_CHANCE } from '../src/simulator/data/ingestion.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { describeNotification, startWebhookReceiver, type WebhookReceiver } from './alert-receiver.js';
import { DEMO_TIMING, findAlertmanager, startDemoAlertmanager, type DemoAlertmanager } from './demo-alertmanager.js';
import { killAllChildrenNow, stopAllChildren } from './demo-process.js';
import {
  DEMO_FOR_SECONDS,
  DEMO_INTERVAL_SECONDS,
  findPrometheus,
  shippedForSeconds,
  startDemoPrometheus,
  type DemoPrometheus,
} from './demo-prometheus.js';

/** How long "break a connector" keeps it broken: well past the time its alert needs to fire. */
export const BREAK_HOLD_SECONDS = 15 * 60;

const FLAGS = ['--no-prometheus', '--no-alertmanager'];
/** The banner's indent under a link's name, for the lines that say more about it. */
const INDENT = ' '.repeat(19);

function usage(): never {
  console.log(`usage: npm run demo [-- --no-prometheus | --no-alertmanager]

Starts the CMDB simulator and the exporter on loopback, a Prometheus with the shipped alerting rules
(their for: durations shortened for the demo) and an Alertmanager with the shipped routing and
inhibition whose notifications are printed here: the pinned versions, fetched on first use
(npm run parts; CMDB_PART_PROMETHEUS and CMDB_PART_ALERTMANAGER name your own binaries).
Ports: DEMO_SIMULATOR_PORT (8080), DEMO_EXPORTER_PORT (9873), DEMO_PROMETHEUS_PORT (9090),
DEMO_ALERTMANAGER_PORT (9093). Ctrl-C stops it all; kill -HUP reloads the exporter's configuration.`);
  process.exit(0);
}

/** What the demo started, stopped in reverse order on the way out (the children also by stopAllChildren). */
const cleanups: Array<() => Promise<void>> = [];
let stopping: Promise<void> | undefined;

/** Stops everything the demo started, then exits with `code`: the one way out. */
function shutdown(code: number, why?: string): Promise<void> {
  stopping ??= (async () => {
    if (why) console.log(`\n${why}`);
    for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => console.error(`while stopping: ${String(err)}`));
    await stopAllChildren();
    process.exit(code);
  })();
  return stopping;
}

/** Signals and errors: each ends the demo through shutdown(), SIGHUP excepted, which reloads. */
function handleEndings(reload: () => Promise<string>): void {
  let firstSignalAt: number | undefined;
  const onStop = (signal: NodeJS.Signals) => {
    // Ctrl-C reaches this process twice (from the terminal and relayed by npm/tsx): only a second
    // signal a moment later means "now"; the children are killed even then.
    if (firstSignalAt !== undefined) {
      if (Date.now() - firstSignalAt > 1000) {
        killAllChildrenNow();
        process.exit(1);
      }
      return;
    }
    firstSignalAt = Date.now();
    void shutdown(0, `${signal}: stopping the exporter, the simulator and what the demo started`);
  };
  process.on('SIGINT', onStop);
  process.on('SIGTERM', onStop);
  process.on('SIGHUP', () => {
    void reload().then((message) => console.log(`SIGHUP: ${message}`));
  });
  process.on('uncaughtException', (err) => void shutdown(1, `the demo failed: ${err.stack ?? err.message}`));
  process.on('unhandledRejection', (err) => void shutdown(1, `the demo failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`));
  // The last resort: whatever ends the process, its children go with it.
  process.on('exit', killAllChildrenNow);
}

/** A notification as the demo prints it: the time it arrived, then what the shipped templates say. */
function printNotification(n: Parameters<typeof describeNotification>[0]): void {
  const at = new Date(n.at).toISOString().slice(11, 19);
  console.log(`\nnotification ${at} UTC ${describeNotification(n)}`);
}

/**
 * Every list endpoint has answered, and so have the Action jobs they asked for (fetched after the
 * lists, paced): a failed job there from the start notifies like a failed connector, so the banner
 * must know it.
 */
function everythingRead(app: App): boolean {
  if (!app.readiness().ready) return false;
  return app.landing().stacks.every((s) => {
    if (s.jobBacklog === undefined) return true;
    const jobs = s.endpoints.find((e) => e.endpoint === 'action_jobs');
    return s.jobBacklog === 0 && jobs?.lastPollAt !== undefined;
  });
}

/** The exporter's "what needs attention" lines once everything has been read (at most 60 s). */
async function problemsByDesign(app: App): Promise<string[]> {
  const deadline = Date.now() + 60_000;
  while (!everythingRead(app) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  const model = app.landing();
  return model.stacks.flatMap((stack) =>
    attention({ samples: stack.samples ?? [], endpoints: stack.endpoints, now: model.now, pauses: stack.pauses }).problems.map(
      (p) => `${p.severity.padEnd(8)} ${p.area}${p.subject === undefined ? '' : ` ${p.subject}`}: ${p.text} (${p.alert})`,
    ),
  );
}

const CONFIG = fileURLToPath(new URL('../config/demo.yaml', import.meta.url));

async function withFallback<T>(preferred: number, launch: (port: number) => Promise<T>): Promise<T> {
  try {
    return await launch(preferred);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    console.log(`port ${preferred} is taken; using a free one`);
    return launch(0);
  }
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) usage();
  const unknown = args.filter((a) => !FLAGS.includes(a));
  if (unknown.length > 0) {
    console.error(`unknown argument ${unknown.join(' ')}; try --help`);
    process.exit(2);
  }
  // SIGHUP may come before the exporter has started.
  const started: { app?: App } = {};
  handleEndings(async () => {
    if (!started.app) return 'nothing to reload yet';
    const outcome = await started.app.reload();
    return outcome.ok ? `reloaded config/demo.yaml (${outcome.message})` : `reload rejected: ${outcome.message}`;
  });
  const sim: SimulatorServer = await withFallback(Number(process.env.DEMO_SIMULATOR_PORT ?? 8080), (port) =>
    startSimulator({ host: '127.0.0.1', port, seed: 42, live: true, compression: 'gzip', historyDays: 14 }),
  );
  cleanups.push(() => sim.close());
  // The newest ingestion run starts out running; finish it so every metric family is there at once.
  sim.scenario.finishIngestion('success');
  const state = sim.state();
  const load = (port: number): ExporterConfig => {
    const config = loadConfig({
      configFile: CONFIG,
      env: { ...process.env, DEMO_LISTEN_ADDRESS: `127.0.0.1:${port}`, DEMO_CMDB_URL: sim.url, DEMO_CMDB_SECRET: sim.secret },
    });
    // Lists cannot come through ${VAR} expansion, so the tracked names are set here.
    const track = { assets: state.trackedAssets, users: state.trackedUsers };
    return { ...config, stacks: config.stacks.map((s) => ({ ...s, track })) };
  };
  const exporter = await withFallback(Number(process.env.DEMO_EXPORTER_PORT ?? 9873), (port) => start({ config: load(port), loadConfig: () => load(port) }));
  started.app = exporter;
  cleanups.push(() => exporter.close(2000));

  const prometheusBinary = args.includes('--no-prometheus') ? undefined : findPrometheus();
  const alertmanagerBinary = prometheusBinary && !args.includes('--no-alertmanager') ? findAlertmanager() : undefined;
  const alertmanager = alertmanagerBinary ? await startAlerting(alertmanagerBinary) : undefined;
  let prometheus: DemoPrometheus | undefined;
  if (prometheusBinary) {
    try {
      prometheus = await startDemoPrometheus({
        binary: prometheusBinary,
        target: new URL(exporter.url ?? '').host,
        port: Number(process.env.DEMO_PROMETHEUS_PORT ?? 9090),
        alertmanager: alertmanager?.address,
        // Notifications link to the runbooks this exporter serves, not to the repository's copy.
        runbookBaseUrl: `${exporter.url ?? ''}/docs/alerts`,
      });
      if (prometheus.movedPort) console.log(`port ${process.env.DEMO_PROMETHEUS_PORT ?? 9090} is taken; Prometheus uses a free one`);
    } catch (err) {
      console.log(`Prometheus did not start, so the demo runs without it: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  const intervals = load(0).stacks[0]?.intervals;
  const connectorsEvery = intervals?.connectors ?? 30;
  const every = (group: 'connectors' | 'license'): string => `${intervals?.[group] ?? '?'}s`;
  // A connector whose own runs succeed, so the one broken here stands out from those broken by design.
  const victim = state.connectors.find((c) => c.usualStatus === 'Success')?.bridgeName ?? state.connectors[0]?.bridgeName ?? 'x';
  const shippedFor = shippedForSeconds().get('CmdbConnectorError') ?? 300;
  const demoFor = Math.min(shippedFor, DEMO_FOR_SECONDS);
  // Worst case: the change lands just after a poll (one interval), the schedule's spread (up to one
  // more), a scrape and an evaluation, then the for: duration.
  const fireWithin = 2 * connectorsEvery + 2 * DEMO_INTERVAL_SECONDS + demoFor;
  const byDesign = await problemsByDesign(exporter);

  console.log(`
cmdb-exporter demo is running (Ctrl-C stops it, kill -HUP ${process.pid} reloads config/demo.yaml)
  status page      ${exporter.url}/
  metrics          ${exporter.url}/metrics
  readiness        ${exporter.url}/readyz
  CMDB simulator   ${sim.url}/_admin/state  (what the simulated CMDB holds now; the exporter reads its API, same host and port)
${
  prometheus
    ? `  Prometheus       ${prometheus.pages.home}  (the shipped rules, for: cut to at most ${DEMO_FOR_SECONDS}s for the demo)${
        prometheus.pages.ui ? '' : `\n${INDENT}this Prometheus serves no web UI (Debian's package ships none): its links here are its HTTP API's, JSON`
      }
  alerts           ${prometheus.pages.alerts}`
    : `  Prometheus       not started${args.includes('--no-prometheus') ? ' (--no-prometheus)' : ': why is said above (`npm run parts -- path prometheus` fetches the pinned one and says what fails)'}`
}
${
  alertmanager
    ? `  Alertmanager     ${alertmanager.page}  (the shipped routing, grouping and inhibition; group_wait ${DEMO_TIMING.group_wait}, group_interval ${DEMO_TIMING.group_interval})${
        alertmanager.ui ? '' : `\n${INDENT}this Alertmanager serves no web UI (Debian's package ships none): the link is its API v2's alert groups, JSON`
      }
${INDENT}each notification it sends is printed below, one per problem of a stack`
    : prometheus && !args.includes('--no-alertmanager')
      ? '  Alertmanager     not started: why is said above (`npm run parts -- path alertmanager` fetches the pinned one and says what fails)'
      : ''
}
Problems there by design (the simulated CMDB has them from the start${prometheus ? '; their alerts fire in Prometheus too' : ''}):
${byDesign.length === 0 ? '  none' : byDesign.map((line) => `  ${line}`).join('\n')}
More come by themselves: the simulated CMDB lives on, runs a data ingestion every ${INGESTION_PERIOD_MS / 60_000} minutes and its
Actions and connectors on their schedules; about 1 ingestion run in ${Math.round(1 / RUN_FAILURE_CHANCE)} and 1 Action job in ${Math.round(1 / JOB_FAILURE_CHANCE)} fail, and
now and then a connector's run ends otherwise than usual (a failing one succeeds, a healthy one fails).
${
  alertmanager
    ? 'Their alerts (CmdbIngestionRunFailed, CmdbActionJobFailed, CmdbConnectorError) fire and resolve, and are\nnotified below, as they happen.'
    : prometheus
      ? 'Their alerts (CmdbIngestionRunFailed, CmdbActionJobFailed, CmdbConnectorError) fire and resolve as they happen.'
      : 'The status page shows them as they happen.'
}

Break a connector (it stays broken for ${BREAK_HOLD_SECONDS / 60} minutes, then its own runs heal it):
  curl -X POST ${sim.url}/_admin/scenario/runConnector -H 'content-type: application/json' -d '{"bridgeName":"${victim}","status":"Error","holdSeconds":${BREAK_HOLD_SECONDS}}'
${
  prometheus
    ? `  CmdbConnectorError for ${victim} fires within about ${Math.ceil(fireWithin / 60)} minutes (${fireWithin}s at most): the next connector
  poll (every ${every('connectors')}, plus the schedule's spread), a scrape and an evaluation (every ${DEMO_INTERVAL_SECONDS}s), then ${demoFor}s
  pending (the shipped rule waits ${Math.round(shippedFor / 60)}m). Watch it go pending, then firing, at ${prometheus.pages.alerts}${
        alertmanager
          ? `
  Alertmanager then sends one notification for it, ${DEMO_TIMING.group_wait} later, printed here:
    notification HH:MM:SS UTC [WARNING] stack demo: connector ${victim} (receiver cmdb-warning; …)`
          : ''
      }`
    : `  The status page shows it at the next connector poll (every ${every('connectors')}).`
}
Heal it at once:
  curl -X POST ${sim.url}/_admin/scenario/runConnector -H 'content-type: application/json' -d '{"bridgeName":"${victim}","status":"Success"}'
Let the license run out (5 days left: critical):
  curl -X POST ${sim.url}/_admin/scenario/setLicenseExpiry -H 'content-type: application/json' -d '{"date":"${new Date(Date.now() + 5 * 86400_000).toISOString().slice(0, 10)}"}'
A change shows at the exporter's next poll of that endpoint, never at once: the exporter polls on a
schedule and a scrape never asks the CMDB. Here the connector history is polled every ${every('connectors')},
the license every ${every('license')}, so allow up to about twice that (the first poll after the change,
plus the spread of the schedule); the status page's "last poll" column shows when each poll ran.

The simulator also serves 14 days of history (daily counts, Action jobs, ingestion runs); ${
  prometheus
    ? `backfill it into the demo's Prometheus
(docs/backfill.md; --prometheus.url gives the backfilled series the instance label Prometheus gives
the live target, so that they join the scraped ones: the command prints which it took):
  DEMO_LISTEN_ADDRESS=${new URL(exporter.url ?? '').host} DEMO_CMDB_URL=${sim.url} DEMO_CMDB_SECRET=${sim.secret} npx tsx src/main.ts backfill --config config/demo.yaml --from 14d --out /tmp/cmdb-demo-backfill --prometheus.url ${prometheus.url} --remote-write.url ${prometheus.url}/api/v1/write
  then ${prometheus.pages.graph('cmdb_assets', '2w', 'count(count_over_time(cmdb_assets[2w]))')} (one series, the scraped one: count(count_over_time(cmdb_assets[2w])) is 1)`
    : `see what a backfill of it would read
(docs/backfill.md):
  DEMO_LISTEN_ADDRESS=127.0.0.1:0 DEMO_CMDB_URL=${sim.url} DEMO_CMDB_SECRET=${sim.secret} npx tsx src/main.ts backfill --config config/demo.yaml --from 14d --dry-run`
}
`);

}

/**
 * The receiver that prints each notification here, and the Alertmanager that sends to it; without
 * them (Alertmanager did not start) the demo runs on, its alerts in Prometheus' alerts page alone.
 */
async function startAlerting(binary: string): Promise<DemoAlertmanager | undefined> {
  let receiver: WebhookReceiver | undefined;
  try {
    const r = await startWebhookReceiver(printNotification);
    receiver = r;
    cleanups.push(() => r.close());
    const am = await startDemoAlertmanager({ binary, port: Number(process.env.DEMO_ALERTMANAGER_PORT ?? 9093), receiverUrl: r.url });
    if (am.movedPort) console.log(`port ${process.env.DEMO_ALERTMANAGER_PORT ?? 9093} is taken; Alertmanager uses a free one`);
    return am;
  } catch (err) {
    console.log(`Alertmanager did not start, so the demo runs without notifications: ${err instanceof Error ? err.message : String(err)}`);
    await receiver?.close();
    return undefined;
  }
}

main().catch((err: unknown) => {
  void shutdown(1, `the demo failed: ${err instanceof ConfigError ? err.message : err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
});
