/** `npm run simulator`: the simulated CMDB as a process, for the demo and for trying the exporter. */
import { ConfigError } from '../errors.js';
import { USAGE, parseCli } from './cli.js';
import { startSimulator } from './server.js';

async function main(argv: readonly string[]): Promise<void> {
  let options;
  try {
    options = parseCli(argv);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message.replace('invalid configuration', 'invalid command line'));
    console.error('Run with --help for the flags.');
    process.exit(2);
  }
  if (options === 'help') {
    console.log(USAGE);
    return;
  }
  const sim = await startSimulator(options);
  const state = sim.state();
  // Demo credentials, not secrets: printing them is the point (the exporter needs them).
  console.log(`CMDB simulator listening on ${sim.url} (seed ${state.seed}, ${state.live ? 'live' : 'time frozen'})`);
  console.log(`  base URL        ${sim.url}`);
  console.log(`  client id       ${sim.clientId}`);
  console.log(`  secret          ${sim.secret}`);
  console.log(`  admin           ${sim.url}/_admin/state`);
  console.log(`  tracked assets  ${JSON.stringify(state.trackedAssets)}`);
  console.log(`  tracked users   ${JSON.stringify(state.trackedUsers)}`);
  console.log(`  data            ${state.counts.connectors} connectors (${state.counts.connectorRuns} runs), ${state.counts.actions} Actions, ${state.counts.ingestionRuns} ingestion runs`);

  const stop = (signal: string) => {
    console.log(`${signal}: closing`);
    sim.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error('close failed', err);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error('simulator failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
