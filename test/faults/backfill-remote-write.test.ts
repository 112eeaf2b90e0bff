/**
 * Remote write by the book, against a receiver that decodes every request as it arrives and
 * answers it 150 ms later (test/helpers/order-receiver.ts):
 *
 * - a 2-day backfill of the simulator in requests of at most 500 samples: every sample delivered
 *   once, no series in two requests in flight at once, no sample older than one already received
 *   for its series, and still requests in flight at once (for different series). Before, one pool
 *   of four sent any batch of any window: a series was in two requests in flight hundreds of times.
 * - a target that answers 503 to its first three requests, the pre-flight check's included (a
 *   Prometheus restarting): the backfill waits it out and completes. Before, the check's one 503
 *   ended the backfill with exit 2 ("bad flags, configuration or target").
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { runCommand } from '../helpers/backfill.js';
import { OrderReceiver } from '../helpers/order-receiver.js';

const DAY = 86_400;
let sim: SimulatorServer;
let dir: string;
let config: string;
const receivers: OrderReceiver[] = [];

beforeAll(async () => {
  sim = await startSimulator({ live: false, connectorPeriodSeconds: DAY, historyDays: 3, size: { runsPerConnector: 3, jobsPerAction: 20, ingestionRuns: 30 } });
  dir = mkdtempSync(join(tmpdir(), 'cmdb-fault-backfill-rw-'));
  config = join(dir, 'exporter.yaml');
  const state = sim.state();
  writeFileSync(
    config,
    stringify({
      stacks: [
        {
          name: 'rw',
          baseUrl: sim.url,
          clientId: sim.clientId,
          secret: sim.secret,
          rateLimitPerMinute: 6000,
          backfillRequestsPerMinute: 6000,
          track: { assets: state.trackedAssets, users: state.trackedUsers },
        },
      ],
    }),
  );
});

afterAll(async () => {
  await sim.close();
  await Promise.all(receivers.map((r) => r.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function receiver(opts: ConstructorParameters<typeof OrderReceiver>[0]): Promise<OrderReceiver> {
  const r = new OrderReceiver(opts);
  await r.start();
  receivers.push(r);
  return r;
}

/** The samples the command says it sent (this run). */
const sentSamples = (stdout: string) => Number(/remote write: (\d+) samples/.exec(stdout)?.[1] ?? Number.NaN);

describe('remote write by the book', () => {
  it('a 2-day backfill in requests of 500 samples: each series in order and in one request at a time, requests for different series in parallel', async () => {
    const target = await receiver({ answerAfterMs: 150 });
    const r = await runCommand(['--config', config, '--from', '2d', '--out', join(dir, 'order'), '--instance', 'x:1', '--remote-write.url', `${target.url}/api/v1/write`, '--remote-write.max-samples-per-send', '500']);
    const said = `exit ${r.code}\n${r.stdout}\n${r.stderr.slice(-3000)}`;
    expect(r.code, said).toBe(0);
    const sent = sentSamples(r.stdout);
    expect(sent, said).toBeGreaterThan(50_000);
    // Every sample delivered, each once.
    expect(target.samples.size, said).toBe(sent);
    expect(target.duplicates()).toEqual([]);
    // The protocol's ordering rule, as the receiver saw it.
    const figures = { requests: target.writes, seriesInFlightTwice: target.seriesInFlightTwice, olderThanReceived: target.olderThanReceived, overlapping: target.overlapping };
    expect({ ...figures, requests: 0, overlapping: 0 }, JSON.stringify(figures)).toEqual({ requests: 0, seriesInFlightTwice: 0, olderThanReceived: 0, overlapping: 0 });
    // Still parallel: requests for different series were in flight at once.
    expect(target.maxInFlight, JSON.stringify(figures)).toBeGreaterThan(1);
    expect(target.overlapping, JSON.stringify(figures)).toBeGreaterThan(target.writes / 4);
  });

  it('a target answering 503 to its first three requests, the pre-flight check included, is waited out: the backfill completes', async () => {
    const target = await receiver({ answerAfterMs: 0, status: (n) => (n <= 3 ? 503 : undefined) });
    const r = await runCommand(['--config', config, '--from', '1d', '--out', join(dir, 'restarting'), '--instance', 'x:1', '--remote-write.url', `${target.url}/api/v1/write`]);
    const said = `exit ${r.code}\n${r.stdout}\n${r.stderr.slice(-3000)}`;
    expect(r.code, said).toBe(0);
    expect(target.answered.slice(0, 3)).toEqual([503, 503, 503]);
    expect(target.samples.size, said).toBe(sentSamples(r.stdout));
    expect(target.duplicates()).toEqual([]);
  });
});
