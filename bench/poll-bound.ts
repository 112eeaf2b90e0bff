/**
 * `npx tsx bench/poll-bound.ts`: how long a poll against a hanging endpoint holds it up, at the
 * default settings (issue 11 #11). The simulator (loopback) hangs on data_ingestion; one poll of the
 * ingestion group runs through the real client; printed: seconds from the start of the poll until
 * the endpoint reports down, the attempts sent, and the outcome. Bounded: the simulator hangs for at
 * most 600 s and the poll for at most its interval.
 */
import { openRoad } from '../src/cmdb/road.js';
import { pollSettings } from '../src/config/endpoints.js';
import { StackPoller } from '../src/scheduler/stack-poller.js';
import { startSimulator } from '../src/simulator/server.js';
import { SnapshotStore } from '../src/store/snapshot-store.js';
import { quietParts, simulatorStack } from './stack.js';

const sim = await startSimulator({ host: '127.0.0.1', port: 0 });
sim.addFault({ endpoint: 'data_ingestion', latencyMs: 600_000 });
const stack = simulatorStack(sim);
const { scrubber, logger, instruments } = quietParts('error');
const road = openRoad({ stack, instruments, logger, scrubber });
const store = new SnapshotStore({ instruments, logger });
const interval = stack.intervals.ingestion;
const settings = pollSettings(stack);
store.addStack(stack.name, new Map(settings.enabled.map((e) => [e, { intervalSeconds: interval, staleAfterSeconds: interval * 3 }])), 10_000);
const poller = new StackPoller({ stack, settings, api: road.readers, store, logger, scrubber, now: () => Date.now() / 1000 });
const started = Date.now();
await poller.poll('ingestion');
const status = poller.runner.status().find((s) => s.endpoint === 'data_ingestion');
console.log(
  `hanging data_ingestion, defaults (timeout ${stack.timeoutSeconds}s, ${stack.retries.max} retries, interval ${interval}s): ` +
    `down after ${((Date.now() - started) / 1000).toFixed(1)} s, ${sim.requests().filter((r) => r.endpoint === 'data_ingestion').length} attempts, ` +
    `outcome ${status?.outcome}, cmdb_endpoint_up ${store.snapshot(stack.name, 'data_ingestion')?.up}`,
);
await road.close();
await sim.close();
