import { describe, expect, it } from 'vitest';
import { PATHS } from '../../src/api/endpoints.js';
import { ConfigError } from '../../src/errors.js';
import { parseCli, parseFaultSpec } from '../../src/simulator/cli.js';
import { fetchToken, get } from './helpers.js';
import { runCli, startCli } from './cli-process.js';

describe('parseCli', () => {
  it('maps every flag onto the simulator options', () => {
    const options = parseCli([
      '--port', '9000', '--host', '::1', '--seed', '7', '--client-id', 'c', '--secret', 's', '--no-live', '--page-size', '50',
      '--connector-period', '86400',
      '--connectors', '3', '--profiles-per-connector', '4', '--runs-per-connector', '5', '--actions', '6', '--jobs-per-action', '7',
      '--ingestion-runs', '8', '--tasks-per-run', '9', '--tracked-assets', '10', '--tracked-users', '11', '--changes-per-record', '12',
      '--fault', 'license:status=503,times=2', '--fault', '*:latency=200',
    ]);
    expect(options).toMatchObject({
      port: 9000, host: '::1', seed: 7, clientId: 'c', secret: 's', live: false, connectorPageSize: 50, connectorPeriodSeconds: 86400,
      size: {
        connectors: 3, profilesPerConnector: 4, runsPerConnector: 5, actions: 6, jobsPerAction: 7,
        ingestionRuns: 8, tasksPerRun: 9, trackedAssets: 10, trackedUsers: 11, changesPerRecord: 12,
      },
      faults: [{ endpoint: 'license', status: 503, times: 2 }, { endpoint: '*', latencyMs: 200 }],
    });
  });

  it('keeps one token per client with --one-token-per-client', () => {
    expect(parseCli(['--one-token-per-client'])).toMatchObject({ oneTokenPerClient: true });
    expect(parseCli([])).not.toHaveProperty('oneTokenPerClient');
  });

  it('defaults to port 8080, seed 42, live', () => {
    expect(parseCli([])).toMatchObject({ port: 8080, host: '127.0.0.1', seed: 42, live: true, faults: [] });
  });

  it('fixes the clock with --now and --no-live', () => {
    const options = parseCli(['--no-live', '--now', '2025-01-02T03:04:05Z']);
    expect(options !== 'help' && options.now?.()).toBe(Date.parse('2025-01-02T03:04:05Z'));
  });

  it.each([
    [['--bogus'], 'arguments'],
    [['--port', 'x'], '--port'],
    [['--connectors', '1.5'], '--connectors'],
    [['--now', 'soon'], '--now'],
    [['--fault', 'license'], '--fault'],
    [['--fault', 'license:colour=red'], '--fault'],
    [['--fault', 'nope:status=500'], '--fault endpoint'],
  ])('rejects %j naming %s', (args, path) => {
    try {
      parseCli(args);
      expect.unreachable('parseCli accepted bad flags');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => i.path)).toContain(path);
    }
  });

  it.each([
    ['license:reset', { endpoint: 'license', reset: true }],
    ['connector:malformed', { endpoint: 'connector', malformedJson: true }],
    ['actions:wrong-shape,times=1', { endpoint: 'actions', wrongShape: true, times: 1 }],
    ['license:status=429,retry-after=30', { endpoint: 'license', status: 429, retryAfterSeconds: 30 }],
    ['license:redirect=http://127.0.0.1:1/x', { endpoint: 'license', redirectTo: 'http://127.0.0.1:1/x' }],
    ['actions:path=/CMDB/v2/system/metrics/actions,status=404', { endpoint: 'actions', path: '/CMDB/v2/system/metrics/actions', status: 404 }],
    ['license:status=502,content-type=text/html', { endpoint: 'license', status: 502, contentType: 'text/html' }],
    ['license:drip=500', { endpoint: 'license', dripMs: 500 }],
    ['connector:oversize=1048576,chunked', { endpoint: 'connector', oversizeBytes: 1048576, chunked: true }],
  ])('parses the fault spec %s', (spec, rule) => {
    expect(parseFaultSpec(spec)).toEqual(rule);
  });
});

describe('simulator process', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('prints URL, credentials, admin URL and tracked names, serves, and exits 0 on %s', async (signal) => {
    const cli = await startCli(['--port', '0', '--no-live', '--fault', 'license:status=503,times=1']);
    const out = cli.stdout();
    expect(out).toContain(`base URL        ${cli.url}`);
    expect(out).toContain('client id       demo-client');
    expect(out).toContain('secret          demo-secret');
    expect(out).toContain(`${cli.url}/_admin/state`);
    expect(out).toContain('R&D-LAPTOP-0042');
    expect(out).toContain('jürgen.weiß@example.com');
    const token = await fetchToken({ url: cli.url, clientId: 'demo-client', secret: 'demo-secret' });
    expect((await get(cli, PATHS.license()[0] as string, token)).status).toBe(503);
    expect((await get(cli, PATHS.license()[0] as string, token)).status).toBe(200);
    expect(await cli.stop(signal)).toBe(0);
  });

  it('exits 2 with a message on bad flags', async () => {
    const { done } = runCli(['--connectors', '-3', '--what']);
    const { code, stderr } = await done;
    expect(code).toBe(2);
    expect(stderr).toContain('invalid command line');
  });

  it('prints the help and exits 0 with --help', async () => {
    const { done } = runCli(['--help']);
    const { code, stdout } = await done;
    expect(code).toBe(0);
    expect(stdout).toContain('--fault SPEC');
  });
});

describe('connector pace flags (issue 21)', () => {
  it('set the pace of the connector history', () => {
    const options = parseCli(['--connector-ms-per-row', '23', '--connector-base-ms', '600', '--connector-inserts-per-page', '2']);
    expect(options).toMatchObject({ connectorPace: { msPerRow: 23, baseMs: 600, insertsPerPage: 2 } });
  });

  it('name a bad value', () => {
    expect(() => parseCli(['--connector-ms-per-row=-1'])).toThrow(/connector-ms-per-row[^]*must be at least 0/);
    expect(() => parseCli(['--connector-inserts-per-page', 'x'])).toThrow(/--connector-inserts-per-page/);
  });
});
