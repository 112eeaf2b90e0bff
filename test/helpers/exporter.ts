import { Writable } from 'node:stream';
import { start, type App, type StartOptions } from '../../src/app.js';
import type { ExporterConfig, StackConfig } from '../../src/config/types.js';
import { createLogger } from '../../src/logger.js';
import { SecretScrubber } from '../../src/secrets.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { testStack } from './stack.js';

/** A stack pointed at a running simulator, tracking the names it keeps change logs for. */
export function stackFor(sim: SimulatorServer, overrides: Partial<StackConfig> = {}): StackConfig {
  const state = sim.state();
  return testStack({
    name: 'sim',
    baseUrl: sim.url,
    auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey: 'clientID' },
    track: { assets: state.trackedAssets, users: state.trackedUsers },
    ...overrides,
  });
}

export function configFor(stacks: StackConfig[], overrides: Partial<ExporterConfig> = {}): ExporterConfig {
  return { listenAddress: '127.0.0.1:0', logLevel: 'silent', logFormat: 'json', enableReload: false, stacks, ...overrides };
}

/** The exporter in-process, its log lines captured. Default: no HTTP server, no scheduler. */
export async function startExporter(
  config: ExporterConfig,
  opts: Partial<StartOptions> = {},
): Promise<{ app: App; logText: () => string }> {
  const chunks: string[] = [];
  const scrubber = new SecretScrubber();
  const logger = createLogger({
    level: config.logLevel,
    format: 'json',
    scrubber,
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        chunks.push(chunk.toString('utf8'));
        done();
      },
    }),
  });
  const app = await start({ config, logger, scrubber, serve: false, schedule: false, defaultMetrics: false, ...opts });
  return { app, logText: () => chunks.join('') };
}
