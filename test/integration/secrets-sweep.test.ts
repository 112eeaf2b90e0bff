/**
 * The secrets sweep (issue 11): secrets planted in every credential field (client secret, bearer
 * token, proxy password), in every free-text field the CMDB sends (docker_cmd, source_settings,
 * event messages, error_msg and action_status_msg — the simulator's PLANTED_SECRETS — and the
 * token endpoint's error message), pasted into keys that are not secret (userAgent, clientId,
 * track.assets) and inside server error pages. The real daemon (src/main.ts as a child process)
 * runs against two simulators; its trace-level log, /metrics, the status page, /readyz, and the
 * output of `--once` and `--check-config` must hold none of them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { freePort, runDaemon } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

const SECRETS = {
  clientSecret: 'sweep-client-secret-Ha71Qz',
  misplaced: 'sweep-misplaced-secret-Vo38Lk',
  token: 'sweep-bearer-token-Mq52Xe',
  proxyPassword: 'sweep-proxy-pass-Tc94Rb',
  tokenError: 'sweep-token-error-Gp27Us',
  serverPage: 'sweep-server-page-Kb83Fj',
} as const;

let good: SimulatorServer;
let hostile: SimulatorServer;
let dir: string;
let configFile: string;

function planted(): string[] {
  return [...Object.values(SECRETS), ...PLANTED_SECRETS, ...good.issuedTokens(), ...hostile.issuedTokens()];
}

function leaksIn(text: string): string[] {
  return planted().filter((s) => text.includes(s));
}

beforeAll(async () => {
  good = await startSimulator({ seed: 5, secret: SECRETS.clientSecret });
  good.scenario.finishIngestion('success');
  // Status *values* (Success, Error, FAILED …) are exported as state-set labels exactly as sent
  // (docs/metrics.md), so none is planted here; the status *messages* (action_status_msg,
  // profile.error_msg, event messages) carry the simulator's PLANTED_SECRETS.
  hostile = await startSimulator({ seed: 6 });
  hostile.addFault({ endpoint: 'access_token', status: 401, body: JSON.stringify({ code: 401002, message: `Invalid client credentials: ${SECRETS.tokenError}` }) });
  const page = `<html><body><h1>503</h1><pre>db password=${SECRETS.serverPage}</pre></body></html>`;
  hostile.addFault({ endpoint: 'license', status: 503, body: page, contentType: 'text/html' });
  hostile.addFault({ endpoint: 'metrics_data', status: 500, body: JSON.stringify({ code: 500, message: `query failed: ${SECRETS.serverPage}` }) });
  hostile.addFault({ endpoint: 'connector', status: 200, body: `{"content": [{"docker_cmd": "${SECRETS.serverPage}"` });

  const closedPort = await freePort();
  const state = good.state();
  const config = {
    defaults: { rateLimitPerMinute: 6000, timeoutSeconds: 3, connectTimeoutSeconds: 2, retries: { max: 0 } },
    stacks: [
      // Polls real data full of planted secrets.
      { name: 'good', baseUrl: good.url, clientId: good.clientId, secret: SECRETS.clientSecret, track: { assets: state.trackedAssets, users: state.trackedUsers } },
      // Its secret pasted into keys that are not secret; the token endpoint's refusal quotes a secret.
      {
        name: 'misplaced',
        baseUrl: hostile.url,
        clientId: SECRETS.misplaced,
        secret: SECRETS.misplaced,
        userAgent: `cmdb-exporter ${SECRETS.misplaced}`,
        track: { assets: [SECRETS.misplaced] },
      },
      // A bearer token the CMDB refuses; error pages with secrets.
      { name: 'token', baseUrl: hostile.url, token: SECRETS.token },
      // A proxy with a password that cannot be reached.
      { name: 'proxied', baseUrl: good.url, clientId: good.clientId, secret: SECRETS.clientSecret, proxyUrl: `http://sweeper:${SECRETS.proxyPassword}@127.0.0.1:${closedPort}` },
    ],
  };
  dir = mkdtempSync(join(tmpdir(), 'cmdb-sweep-'));
  configFile = join(dir, 'exporter.yaml');
  writeFileSync(configFile, stringify(config));
});

afterAll(async () => {
  await good?.close();
  await hostile?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('secrets sweep', () => {
  it('the running daemon: trace log, /metrics, status page and /readyz hold no secret', async () => {
    const port = await freePort();
    const daemon = runDaemon(['--config', configFile, '--log.level', 'trace', '--web.listen-address', `127.0.0.1:${port}`], {});
    try {
      const base = `http://127.0.0.1:${port}`;
      await waitFor('/readyz 200', async () => ((await fetch(`${base}/readyz`)).status === 200 ? true : undefined), { gone: daemon.gone });
      const pages: Record<string, string> = {};
      for (const path of ['/metrics', '/', '/readyz']) pages[path] = await (await fetch(`${base}${path}`)).text();
      // The sweep is only worth something if the daemon met every planted text: data was read and refused.
      expect(pages['/metrics']).toMatch(/^cmdb_endpoint_up\{stack="good",endpoint="connector"\} 1$/m);
      expect(good.requests().some((r) => r.endpoint === 'data_ingestion_detail' && r.status === 200)).toBe(true);
      expect(hostile.requests().some((r) => r.endpoint === 'access_token' && r.status === 401)).toBe(true);
      expect(hostile.requests().some((r) => r.endpoint === 'license' && r.status === 503)).toBe(true);
      await daemon.stop('SIGTERM');
      expect(daemon.output()).toContain('"level":"trace"'); // trace lines were written
      // Every place at once, so that a failure names all leaks.
      const leaks = Object.fromEntries(
        Object.entries({ ...pages, log: daemon.output() })
          .map(([place, text]) => [place, leaksIn(text)] as const)
          .filter(([, found]) => found.length > 0),
      );
      expect(leaks).toEqual({});
    } finally {
      await daemon.stop('SIGKILL');
    }
  });

  it('--once: the exposition and the log hold no secret', async () => {
    const daemon = runDaemon(['--config', configFile, '--log.level', 'trace', '--once'], {});
    expect(await daemon.exited).toBe(1); // endpoints of the hostile stacks fail
    expect(daemon.output()).toMatch(/^cmdb_endpoint_up\{stack="good",endpoint="license"\} 1$/m);
    expect(leaksIn(daemon.output())).toEqual([]);
  });

  it('--check-config: the report holds no secret', async () => {
    const daemon = runDaemon(['--config', configFile, '--log.level', 'trace', '--check-config'], {});
    expect(await daemon.exited).toBe(0);
    expect(daemon.output()).toContain('configuration OK: 4 stack(s)');
    expect(leaksIn(daemon.output())).toEqual([]);
  });
});
