/**
 * The exporter of the fleet cell, in its own process: N small stacks against one simulator, the
 * scheduler running as in the daemon, every group on the shortest interval (10 s: the busy
 * cadence) or on the default intervals. Usage: tsx bench/fleet-exporter.ts '<FleetInput as JSON>'
 * Prints one JSON line ({ url, pid, startedAtMs }) once it listens, then runs until its parent goes away.
 */
import { pathToFileURL } from 'node:url';
import { start } from '../src/app.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { ExporterConfig, StackConfig } from '../src/config/types.js';
import type { SimulatorAccess } from './simulator-process.js';
import { quietParts, simulatorStack } from './stack.js';

export interface FleetInput extends SimulatorAccess {
  readonly stacks: number;
  /** Every group every 10 s (the busy cadence); false: the default intervals. */
  readonly busy: boolean;
}

export const stackName = (i: number) => `fleet-${String(i).padStart(3, '0')}`;

const BUSY = 10;

function stack(input: FleetInput, i: number): StackConfig {
  const intervals = input.busy ? (Object.fromEntries(Object.keys(BUILTIN_SETTINGS.intervals).map((k) => [k, BUSY])) as unknown as StackConfig['intervals']) : BUILTIN_SETTINGS.intervals;
  // One simulator answers for every stack: the budget must not be what the cell measures.
  const track = { assets: input.trackedAssets, users: input.trackedUsers };
  return simulatorStack(input, { name: stackName(i), rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, intervals, track });
}

async function main(): Promise<void> {
  const input = JSON.parse(process.argv[2] ?? '{}') as FleetInput;
  const { logger, scrubber } = quietParts();
  const config: ExporterConfig = {
    listenAddress: '127.0.0.1:0',
    logLevel: 'error',
    logFormat: 'json',
    enableReload: false,
    stacks: Array.from({ length: input.stacks }, (_, i) => stack(input, i)),
  };
  const startedAtMs = Date.now();
  const app = await start({ config, logger, scrubber, serve: true, schedule: true, defaultMetrics: true });
  process.stdout.write(`${JSON.stringify({ url: app.url, pid: process.pid, startedAtMs })}\n`);
  const stop = () => void app.close(0).then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('disconnect', stop);
}

// Run only as the child process: the fleet cell imports stackName from here.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error('fleet exporter failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
}
