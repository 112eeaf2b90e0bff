/**
 * The exporter's parts as the cells that drive them in their own process use them: a stack of the
 * built-in defaults against the simulator, a quiet logger, and the road to the CMDB.
 */
import { Registry } from 'prom-client';
import { openRoad } from '../src/cmdb/road.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import type { StackConfig } from '../src/config/types.js';
import { createLogger } from '../src/logger.js';
import { createInstruments } from '../src/metrics/instruments.js';
import { SecretScrubber } from '../src/secrets.js';

/** The built-in defaults against the simulator at `sim.url` (its demo credential), `extra` beside them. */
export function simulatorStack(sim: { readonly url: string; readonly clientId: string; readonly secret: string }, extra: Partial<StackConfig> = {}): StackConfig {
  const { clientIdKey, ...settings } = BUILTIN_SETTINGS;
  return {
    ...settings,
    name: 'bench',
    baseUrl: sim.url,
    auth: { kind: 'client', clientId: sim.clientId, secret: sim.secret, clientIdKey },
    tls: { insecureSkipVerify: false },
    ...extra,
  };
}

/** A logger that says nothing (or only its errors, on stderr), with its scrubber and instruments of their own. */
export function quietParts(level: 'silent' | 'error' = 'silent') {
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level, format: 'json', scrubber, destination: process.stderr });
  return { scrubber, logger, instruments: createInstruments(new Registry(), { defaultMetrics: false }) };
}

/** The road to the CMDB (client and readers) for `stack`, as the daemon opens it, with quiet parts. */
export function quietRoad(stack: StackConfig, level: 'silent' | 'error' = 'silent') {
  return openRoad({ stack, ...quietParts(level) });
}
