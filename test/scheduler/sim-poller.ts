/** A StackPoller on the real client against the real simulator, with its store and captured log. */
import { Registry } from 'prom-client';
import { enabledEndpoints, pollSettings } from '../../src/config/endpoints.js';
import { StackPoller } from '../../src/scheduler/stack-poller.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import type { StackConfig } from '../../src/config/types.js';
import { makeClient } from '../cmdb/helpers/client.js';

export function simPoller(stack: StackConfig) {
  const { client, cmdb, log, metrics } = makeClient(stack);
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger });
  const settings = new Map(enabledEndpoints(stack).map((e) => [e, { intervalSeconds: 60, staleAfterSeconds: 180 }] as const));
  store.addStack(stack.name, settings, 10_000);
  const poller = new StackPoller({ stack, settings: pollSettings(stack), api: client, store, logger: log.logger, scrubber: log.scrubber, now: () => Date.now() / 1000 });
  const status = (endpoint: string) => poller.runner.status().find((s) => s.endpoint === endpoint);
  return { poller, store, status, log, metrics, client, cmdb };
}
