/**
 * Issue 21: reads that stay small and a reload that keeps what the stack knows.
 * - Compression: every request asks for gzip; a gzip answer (data and token endpoint, Content-Length
 *   or chunked) is decoded; an encoding the exporter cannot decode is named in the error (and on the
 *   token endpoint is not taken for a credentials problem); a decompression bomb stops at the cap.
 * - Reload: an interval-only change does not restart a slow connector scan at page 0; a steady-state
 *   reload of another setting neither fetches a new token nor starts a full scan.
 * Real simulator, real exporter; every wait is bounded by an event, not a tight margin.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/app.js';
import { pathsOf } from '../../src/api/endpoints.js';
import type { StackConfig } from '../../src/config/types.js';
import { CmdbEncodingError, CmdbTokenRejectedError, CmdbTooLargeError } from '../../src/errors.js';
import type { CronLike } from '../../src/scheduler/scheduler.js';
import type { SimulatorServer } from '../../src/simulator/server.js';
import { makeClient, rejection } from '../cmdb/helpers/client.js';
import { requestsTo, sim, simStack } from '../cmdb/helpers/sim.js';
import { waitFor } from '../helpers/wait.js';
import { configFor, startExporter, stackFor } from '../helpers/exporter.js';

const apps: App[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close(0)));
});

describe('compressed answers from the CMDB', () => {
  it('asks for gzip on every request and reads gzip answers with a Content-Length, data and token endpoints alike', async () => {
    const s = await sim({ compression: 'gzip' });
    const { client, metrics } = makeClient(simStack(s));
    const runs = await client.get('connector');
    expect(runs.length).toBeGreaterThan(0);
    expect((await client.get('license')).expireDate).toBeTruthy();
    const token = requestsTo(s, 'access_token');
    expect(token.length).toBe(1);
    for (const r of s.requests()) expect(r.headers['accept-encoding']).toMatch(/\bgzip\b/);
    // What came over the wire is counted: the compressed size the simulator sent.
    const wire = requestsTo(s, 'connector').reduce((n, r) => n + r.bytes, 0);
    expect(await metrics.value('cmdb_endpoint_response_bytes_total', { stack: 'test', endpoint: 'connector' })).toBe(wire);
  });

  it('reads gzip answers streamed without a Content-Length (a compressing proxy)', async () => {
    const s = await sim({ compression: 'gzip-chunked' });
    const { client } = makeClient(simStack(s));
    expect((await client.get('connector')).length).toBeGreaterThan(0);
    expect((await client.get('metrics_data')).assetCount).toBeGreaterThanOrEqual(0);
    // It was asked for, so it was answered compressed.
    expect(requestsTo(s, 'connector')[0]?.headers['accept-encoding']).toMatch(/\bgzip\b/);
  });

  it('reads deflate and br answers', async () => {
    for (const coding of ['deflate', 'br']) {
      const s = await sim({ faults: [{ endpoint: '*', contentEncoding: coding }] });
      const { client } = makeClient(simStack(s));
      expect((await client.get('connector')).length, coding).toBeGreaterThan(0);
    }
  });

  it('names an encoding it cannot decode, on a data endpoint and on the token endpoint (not as rejected credentials)', async () => {
    const s = await sim({ faults: [{ endpoint: 'license', contentEncoding: 'zstd' }] });
    const { client } = makeClient(simStack(s));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbEncodingError);
    expect(err.message).toContain('"zstd"');
    expect((err as CmdbEncodingError).outcome).toBe('invalid_body');

    const t = await sim({ faults: [{ endpoint: 'access_token', contentEncoding: 'zstd' }] });
    const other = makeClient(simStack(t));
    const tokenErr = await rejection(other.client.get('license'));
    expect(tokenErr).not.toBeInstanceOf(CmdbTokenRejectedError);
    expect(tokenErr.message).toContain('"zstd"');
    expect(tokenErr.message).not.toMatch(/token rejected|client id|secret/i);
  });

  it('stops a gzip bomb at the cap on the decoded bytes, after reading only a little of the wire', async () => {
    // 64 MiB of JSON in ~64 KiB of gzip, against the 1 MiB cap of a single-record answer and a 4 MiB connector cap.
    const s = await sim({ faults: [{ endpoint: 'license', oversizeBytes: 64 * 1024 * 1024, contentEncoding: 'gzip' }] });
    const { client } = makeClient(simStack(s, { maxResponseBytes: 4 * 1024 * 1024 }));
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTooLargeError);
    expect(err.message).toContain('single-record answers');
    // The server stopped once the client hung up: far less than the 64 MiB went over the wire.
    await waitFor('the answer logged with the bytes sent', () => (requestsTo(s, 'license')[0]?.bytes ?? 0) > 0);
    expect(requestsTo(s, 'license')[0]?.bytes).toBeLessThan(1024 * 1024);

    const c = await sim({ faults: [{ endpoint: 'connector', oversizeBytes: 64 * 1024 * 1024, contentEncoding: 'gzip' }] });
    const other = makeClient(simStack(c, { maxResponseBytes: 4 * 1024 * 1024 }));
    const big = await rejection(other.client.get('connector'));
    expect(big).toBeInstanceOf(CmdbTooLargeError);
    expect(big.message).toContain('4194304-byte cap (maxResponseBytes)');
  });
});

/** Cron jobs that never fire: only the start-up polls run (no jitter), so every request is one the test caused. */
const NO_CRON: CronLike = { schedule: () => ({ stop: () => undefined }) };

const pageOf = (rawQuery: string) => Number(new URLSearchParams(rawQuery).get('page'));

async function metric(app: App, line: RegExp): Promise<number | undefined> {
  const m = line.exec(await app.metricsText());
  return m ? Number(m[1]) : undefined;
}

describe('a reload keeps what the stack knows', () => {
  it('an interval-only reload during a slow connector scan lets the scan go on: page 0 is read once', async () => {
    // About 10 pages of connector history, each answered after 1 s: a scan of ~10 s, longer than
    // the 5 s a replaced runtime's polls get to finish.
    const s = (await sim({ faults: [{ endpoint: 'connector', latencyMs: 1000 }] })) as SimulatorServer;
    const pageSize = Math.ceil(s.state().counts.connectorRuns / 10);
    let config = configFor([stackFor(s, { paging: { ...stackFor(s).paging, connectorPageSize: pageSize } })], { enableReload: true });
    const { app } = await startExporter(config, { loadConfig: () => config, schedule: true, cron: NO_CRON, initialJitterMs: 0 });
    apps.push(app);
    await waitFor('connector page 1 asked', async () => (requestsTo(s, 'connector').some((r) => pageOf(r.rawQuery) === 1) ? true : undefined), { timeoutMs: 20_000 });

    const [stack] = config.stacks as [StackConfig];
    config = configFor([{ ...stack, intervals: { ...stack.intervals, license: stack.intervals.license * 2 } }], { enableReload: true });
    const outcome = await app.reload();
    expect(outcome.ok).toBe(true);

    const full = /^cmdb_connector_scans_total\{stack="sim",kind="full"\} (\S+)$/m;
    await waitFor('the full scan to finish', async () => ((await metric(app, full)) === 1 ? true : undefined), { timeoutMs: 60_000 });
    expect(requestsTo(s, 'connector').filter((r) => pageOf(r.rawQuery) === 0), 'page 0 asked again').toHaveLength(1);
    expect(outcome.message).toContain('"reconfigured":1');
    expect(await app.metricsText()).toMatch(/^cmdb_endpoint_up\{stack="sim",endpoint="connector"\} 1$/m);
    // The new interval is in force: the status page shows it.
    expect(app.landing().stacks[0]?.endpoints.find((e) => e.endpoint === 'license')?.intervalSeconds).toBe(stack.intervals.license * 2);
  });

  it('a reload of any setting but the road (service, credentials, paging) during a slow connector scan lets the scan go on, with the new settings in force', async () => {
    const s = (await sim({ faults: [{ endpoint: 'connector', latencyMs: 1000 }] })) as SimulatorServer;
    const pageSize = Math.ceil(s.state().counts.connectorRuns / 10);
    let config = configFor([stackFor(s, { userAgent: 'first', paging: { ...stackFor(s).paging, connectorPageSize: pageSize } })], { enableReload: true });
    const { app } = await startExporter(config, { loadConfig: () => config, schedule: true, cron: NO_CRON, initialJitterMs: 0 });
    apps.push(app);
    await waitFor('connector page 1 asked', async () => (requestsTo(s, 'connector').some((r) => pageOf(r.rawQuery) === 1) ? true : undefined), { timeoutMs: 20_000 });

    // Before, any change but an interval restarted the stack: the scan was dropped and began again at page 0.
    const [stack] = config.stacks as [StackConfig];
    const changed = { ...stack, userAgent: 'second', maxConcurrency: 2, rateLimitPerMinute: 5000, timeoutSeconds: 20, retries: { ...stack.retries, max: 2 }, maxSeries: 50_000 };
    config = configFor([changed], { enableReload: true });
    const outcome = await app.reload();
    expect(outcome).toMatchObject({ ok: true, message: expect.stringContaining('"reconfigured":1') });

    const full = /^cmdb_connector_scans_total\{stack="sim",kind="full"\} (\S+)$/m;
    await waitFor('the full scan to finish', async () => ((await metric(app, full)) === 1 ? true : undefined), { timeoutMs: 60_000 });
    expect(requestsTo(s, 'connector').filter((r) => pageOf(r.rawQuery) === 0), 'page 0 asked again').toHaveLength(1);
    expect(await app.metricsText()).toMatch(/^cmdb_endpoint_up\{stack="sim",endpoint="connector"\} 1$/m);
    // The new settings are in force for what was asked after the reload: its pages went out with the new user agent.
    const lastPage = requestsTo(s, 'connector').at(-1);
    expect(lastPage?.headers['user-agent']).toBe('second');
    expect(await metric(app, /^cmdb_rate_limit_requests_per_minute\{stack="sim"\} (\S+)$/m)).toBe(5000);
  });

  it('a reload that restarts the stack on the same service and credentials (another page size) keeps the token, the connector history, the path spellings and the 403 back-offs', async () => {
    const [first = '', second = ''] = pathsOf('actions');
    // The first spelling of the Action list is not this service's: the client learns the second.
    const s = (await sim()) as SimulatorServer;
    s.addFault({ endpoint: 'actions', path: first, status: 404 });
    s.forbid(['license']);
    let config = configFor([stackFor(s, { userAgent: 'first' })], { enableReload: true });
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    await app.pollOnce();
    expect(requestsTo(s, 'access_token')).toHaveLength(1);
    expect(requestsTo(s, 'license')).toHaveLength(1);
    expect(requestsTo(s, 'actions').map((r) => r.rawPath)).toEqual([first, second]);
    const count = s.requests().length;

    // Another page size for the Action list: a new road on the same service, so the stack restarts.
    config = configFor([stackFor(s, { userAgent: 'second', paging: { ...stackFor(s).paging, actionPageSize: 50 } })], { enableReload: true });
    expect(await app.reload()).toMatchObject({ ok: true, message: expect.stringContaining('"restarted":1') });
    await app.pollOnce();
    const after = s.requests().slice(count);
    expect.soft(after.filter((r) => r.endpoint === 'access_token'), 'a new token').toHaveLength(0);
    expect.soft(after.filter((r) => r.endpoint === 'license'), 'the 403 back-off').toHaveLength(0);
    expect.soft(after.filter((r) => r.endpoint === 'actions').map((r) => r.rawPath), 'the path spelling').toEqual([second]);
    expect(after.every((r) => r.headers['user-agent'] === 'second')).toBe(true);
    expect.soft(await metric(app, /^cmdb_connector_scans_total\{stack="sim",kind="full"\} (\S+)$/m), 'a full scan').toBe(1);
    expect(await metric(app, /^cmdb_connector_scans_total\{stack="sim",kind="incremental"\} (\S+)$/m)).toBe(1);
    expect(app.landing().stacks[0]?.endpoints.find((e) => e.endpoint === 'license')?.state).toBe('forbidden');

    // Another service: nothing passes, a token is fetched there and its history read in full.
    const other = (await sim()) as SimulatorServer;
    config = configFor([stackFor(other, { userAgent: 'second', paging: { ...stackFor(s).paging, actionPageSize: 50 } })], { enableReload: true });
    await app.reload();
    await app.pollOnce();
    expect(requestsTo(other, 'access_token')).toHaveLength(1);
    expect(requestsTo(other, 'license')).toHaveLength(1);
    expect(requestsTo(other, 'actions').map((r) => r.rawPath)[0]).toBe(first);
    expect(await metric(app, /^cmdb_connector_scans_total\{stack="sim",kind="full"\} (\S+)$/m)).toBe(2);
  });

  it('a reload with other credentials fetches a new token and reads the history in full', async () => {
    const s = (await sim()) as SimulatorServer;
    let config = configFor([stackFor(s)], { enableReload: true });
    const { app } = await startExporter(config, { loadConfig: () => config });
    apps.push(app);
    await app.pollOnce();
    const stack = stackFor(s);
    // The same client id under its other key spelling: other credentials as the configuration says, still accepted.
    config = configFor([{ ...stack, auth: { ...(stack.auth as Extract<StackConfig['auth'], { kind: 'client' }>), clientIdKey: 'clientId' } }], { enableReload: true });
    await app.reload();
    await app.pollOnce();
    expect(requestsTo(s, 'access_token')).toHaveLength(2);
    expect(await metric(app, /^cmdb_connector_scans_total\{stack="sim",kind="full"\} (\S+)$/m)).toBe(2);
  });
});
