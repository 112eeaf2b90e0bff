/**
 * `npm run demo`: the embedded CMDB simulator (live data) and the exporter, together on loopback.
 * Prints the URLs to open; Ctrl-C stops both. Ports: 8080 for the simulator and 9873 for the
 * exporter, or free ones when those are taken (override with DEMO_SIMULATOR_PORT / DEMO_EXPORTER_PORT;
 * the README's quick start says so).
 */
import { fileURLToPath } from 'node:url';
import { start, type App } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import type { ExporterConfig } from '../src/config/types.js';
import { ConfigError } from '../src/errors.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';

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
  const sim: SimulatorServer = await withFallback(Number(process.env.DEMO_SIMULATOR_PORT ?? 8080), (port) =>
    startSimulator({ host: '127.0.0.1', port, seed: 42, live: true, compression: 'gzip', historyDays: 14 }),
  );
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
  let app: App;
  try {
    app = await withFallback(Number(process.env.DEMO_EXPORTER_PORT ?? 9873), (port) =>
      start({ config: load(port), loadConfig: () => load(port) }),
    );
  } catch (err) {
    await sim.close();
    throw err;
  }

  const intervals = load(0).stacks[0]?.intervals;
  const every = (group: 'connectors' | 'license'): string => `${intervals?.[group] ?? '?'}s`;
  console.log(`
cmdb-exporter demo is running (Ctrl-C stops it)
  status page      ${app.url}/
  metrics          ${app.url}/metrics
  readiness        ${app.url}/readyz
  CMDB simulator   ${sim.url}  (admin: ${sim.url}/_admin/state)

Try a scenario, e.g. a failing connector or a license about to expire:
  curl -X POST ${sim.url}/_admin/scenario/runConnector -H 'content-type: application/json' -d '{"bridgeName":"${state.connectors[0]?.bridgeName ?? 'x'}","status":"Error"}'
  curl -X POST ${sim.url}/_admin/scenario/setLicenseExpiry -H 'content-type: application/json' -d '{"date":"${new Date(Date.now() + 5 * 86400_000).toISOString().slice(0, 10)}"}'
A change shows at the exporter's next poll of that endpoint, never at once: the exporter polls on a
schedule and a scrape never asks the CMDB. Here the connector history is polled every ${every('connectors')},
the license every ${every('license')}, so allow up to about twice that (the first poll after the change,
plus the spread of the schedule); the status page's "last poll" column shows when each poll ran.

The simulator also serves 14 days of history (daily counts, Action jobs, ingestion runs); see what a
backfill of it would read (docs/backfill.md):
  DEMO_LISTEN_ADDRESS=127.0.0.1:0 DEMO_CMDB_URL=${sim.url} DEMO_CMDB_SECRET=${sim.secret} npx tsx src/main.ts backfill --config config/demo.yaml --from 14d --dry-run
`);

  let stopping = false;
  const stop = async () => {
    if (stopping) process.exit(1);
    stopping = true;
    console.log('\nstopping the exporter and the simulator');
    await app.close(2000);
    await sim.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
