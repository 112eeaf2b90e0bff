import { describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import { EndpointRunner, REMINDER_SECONDS } from '../../src/scheduler/endpoint-runner.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { Exposition } from '../../src/exposition/exposition.js';
import { TEXT_LINES } from '../../src/exposition/text-lines.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { CmdbAbortedError, CmdbHttpError, CmdbInvalidBodyError, CmdbTimeoutError } from '../../src/errors.js';
import type { Sample } from '../../src/metrics/sample.js';
import { captureLogger } from '../helpers/log.js';
import { testStack } from '../helpers/stack.js';

function setup() {
  const log = captureLogger();
  const store = new SnapshotStore({ instruments: createInstruments(new Registry(), { defaultMetrics: false }), logger: log.logger, renderer: TEXT_LINES });
  const exposition = new Exposition(store);
  const stack = testStack({ name: 's' });
  store.addStack('s', new Map([['license', { intervalSeconds: 60, staleAfterSeconds: 180 }], ['data_ingestion_next', { intervalSeconds: 60, staleAfterSeconds: 180 }]]), 100);
  const clock = { t: 1000 };
  log.scrubber.add('topsecret-token');
  const runner = new EndpointRunner({ stack, endpoints: ['license', 'data_ingestion_next'], store, logger: log.logger, scrubber: log.scrubber, now: () => clock.t });
  return { runner, store, exposition, log, clock };
}

const sample: Sample = { name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: 5 };
const fail503 = () => Promise.reject(new CmdbHttpError('GET /CMDB/v2/system/metrics/license', 503, 'Service Unavailable'));
const warnings = (log: ReturnType<typeof captureLogger>) => log.lines().filter((l) => l.level === 'warn');

describe('EndpointRunner', () => {
  it('logs a failure once when it starts, not on every poll, then a reminder after an hour', async () => {
    const { runner, log, clock } = setup();
    for (let i = 0; i < 5; i++) {
      await runner.run('license', fail503);
      clock.t += 60;
    }
    expect(warnings(log)).toHaveLength(1);
    expect(warnings(log)[0]).toMatchObject({
      endpoint: 'license',
      outcome: '503',
      msg: 'GET /CMDB/v2/system/metrics/license: 503 Service Unavailable',
    });
    expect(String(warnings(log)[0]?.hint)).toMatch(/server error/);
    clock.t += REMINDER_SECONDS;
    await runner.run('license', fail503);
    expect(warnings(log)).toHaveLength(2);
    expect(String(warnings(log)[1]?.msg)).toMatch(/^still failing/);
  });

  it('logs again when the failure changes kind, and logs the recovery once', async () => {
    const { runner, log } = setup();
    await runner.run('license', fail503);
    await runner.run('license', () => Promise.reject(new CmdbTimeoutError('GET /CMDB/v2/system/metrics/license', 30)));
    await runner.run('license', async () => ({ kind: 'samples', samples: [sample] }));
    await runner.run('license', async () => ({ kind: 'samples', samples: [sample] }));
    expect(warnings(log).map((l) => l.outcome)).toEqual(['503', 'timeout']);
    const infos = log.lines().filter((l) => String(l.msg).includes('recovered'));
    expect(infos).toHaveLength(1);
    expect(infos[0]).toMatchObject({ failedPolls: 2 });
  });

  it('marks the endpoint down at once but keeps its series, and up again on success', async () => {
    const { runner, store } = setup();
    await runner.run('license', async () => ({ kind: 'samples', samples: [sample] }));
    await runner.run('license', fail503);
    expect(store.snapshot('s', 'license')).toMatchObject({ up: 0, samples: [expect.objectContaining({ value: 5 })] });
    expect(runner.status().find((s) => s.endpoint === 'license')).toMatchObject({ state: 'failing', outcome: '503', consecutiveFailures: 1 });
  });

  it('backs off after a 403: no poll until the back-off has passed, doubling up to the cap', async () => {
    const { runner, clock, store, exposition } = setup();
    let calls = 0;
    const forbidden = () => {
      calls++;
      return Promise.reject(new CmdbHttpError('GET /CMDB/v2/system/metrics/data-ingestion/next', 403, 'Forbidden'));
    };
    await runner.run('data_ingestion_next', forbidden);
    expect(runner.status().find((s) => s.endpoint === 'data_ingestion_next')).toMatchObject({
      state: 'forbidden',
      outcome: 'forbidden',
      retryAt: 1900,
      hint: expect.stringMatching(/^forbidden: .*elevated rights.*Grant it .* or add data_ingestion_next to disabledEndpoints/),
    });
    // Its own metric, so alerts can tell "refused" from "down".
    expect(store.snapshot('s', 'data_ingestion_next')).toMatchObject({ up: 0, forbidden: 1 });
    expect(exposition.text(clock.t)).toContain('cmdb_endpoint_forbidden{stack="s",endpoint="data_ingestion_next"} 1');
    clock.t += 899;
    await runner.run('data_ingestion_next', forbidden);
    expect(calls).toBe(1);
    clock.t += 1;
    await runner.run('data_ingestion_next', forbidden);
    expect(calls).toBe(2);
    expect(runner.status().find((s) => s.endpoint === 'data_ingestion_next')?.retryAt).toBe(1900 + 1800);
  });

  it('logs a 403 once at warn with a hint about rights, not at each back-off retry within the hour', async () => {
    const { runner, log, clock } = setup();
    let calls = 0;
    for (const wait of [900, 1800, 0]) {
      await runner.run('data_ingestion_next', () => {
        calls++;
        return Promise.reject(new CmdbHttpError('GET /x', 403, 'Forbidden'));
      });
      clock.t += wait;
    }
    expect(calls).toBe(3);
    expect(warnings(log)).toHaveLength(1);
    expect(String(warnings(log)[0]?.hint)).toMatch(/permission.*elevated rights.*disabledEndpoints/);
    expect(warnings(log)[0]).toMatchObject({ outcome: 'forbidden' });
  });

  it('does not count a shutdown abort as a failure', async () => {
    const { runner, log } = setup();
    await runner.run('license', () => Promise.reject(new CmdbAbortedError('GET /x')));
    expect(runner.status().find((s) => s.endpoint === 'license')?.state).toBe('pending');
    expect(log.lines()).toHaveLength(0);
  });

  it('treats an unexpected exception as a failure logged at error, never a crash', async () => {
    const { runner, log } = setup();
    await runner.run('license', () => Promise.reject(new TypeError('boom')));
    expect(runner.status().find((s) => s.endpoint === 'license')).toMatchObject({ state: 'failing', outcome: 'error' });
    expect(log.lines().filter((l) => l.level === 'error')).toHaveLength(1);
  });

  it('scrubs secrets from the error shown and logged', async () => {
    const { runner, log } = setup();
    await runner.run('license', () => Promise.reject(new CmdbInvalidBodyError('GET /x', 'token', 'got topsecret-token')));
    expect(runner.status().find((s) => s.endpoint === 'license')?.error).not.toContain('topsecret-token');
    expect(log.text()).not.toContain('topsecret-token');
  });

  it('reports pending endpoints until their first poll finished, successful or not', async () => {
    const { runner } = setup();
    expect(runner.pending()).toEqual(['license', 'data_ingestion_next']);
    await runner.run('license', fail503);
    expect(runner.pending()).toEqual(['data_ingestion_next']);
  });

  it('confirms the held series without a new sample set for an unchanged poll', async () => {
    const { runner, store, clock } = setup();
    await runner.run('license', async () => ({ kind: 'samples', samples: [sample] }));
    clock.t += 60;
    await runner.run('license', async () => ({ kind: 'unchanged' }));
    expect(store.snapshot('s', 'license')).toMatchObject({ up: 1, lastSuccess: 1060, samples: [expect.objectContaining({ value: 5 })] });
  });
});

describe('stack-wide failures', () => {
  it('log a rejected token once for the whole stack, and its recovery once', async () => {
    const { runner, log } = setup();
    const { CmdbTokenRejectedError } = await import('../../src/errors.js');
    const rejected = () => Promise.reject(new CmdbTokenRejectedError('POST /CMDB/v1/access_token', 'token rejected: code 401002 Invalid client credentials'));
    await runner.run('license', rejected);
    await runner.run('data_ingestion_next', rejected);
    expect(warnings(log)).toHaveLength(1);
    expect(warnings(log)[0]).toMatchObject({ outcome: 'rejected', scope: expect.stringContaining('every endpoint') });
    await runner.run('license', async () => ({ kind: 'samples', samples: [sample] }));
    await runner.run('data_ingestion_next', async () => ({ kind: 'samples', samples: [] }));
    expect(log.lines().filter((l) => String(l.msg).includes('recovered'))).toHaveLength(1);
  });
});
