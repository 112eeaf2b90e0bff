/**
 * One CMDB outage, end to end: the built exporter polls two stacks (two simulators), a real
 * Prometheus evaluates the shipped rules, a real Alertmanager routes, groups and inhibits with the
 * shipped configuration, and a webhook receiver run by the test gets what would reach a person.
 *
 * The CMDB of stack `down` stops answering (every connection is reset): the receiver gets exactly
 * one notification, CMDB unreachable for `down` (not one per endpoint), Alertmanager's API lists the
 * stack's endpoint alerts as inhibited by it, and when the CMDB answers again one resolved
 * notification arrives. Stack `up` is untouched throughout.
 *
 * Generated copies, never the shipped files: the rules with their windows and for: shortened for
 * 10 s poll intervals (the cause before its effects, as in the shipped timings; the data alerts wait
 * an hour, so that the problems the simulators have by design stay out of the count), and the
 * Alertmanager configuration with a webhook to the test's receiver and short group timings.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { RECEIVERS, withWebhookReceivers } from '../../scripts/alertmanager/config.js';
import { ALERTMANAGER_FILE } from '../../scripts/gen-alertmanager.js';
import { RULES_DIR, renderRuleFiles, THRESHOLDS } from '../../scripts/gen-rules.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { startAlertmanager, startCollectingReceiver, type CollectingReceiver, type Notification, type RunningAlertmanager } from './harness/alertmanager.js';
import { FAST_INTERVALS, startExporter, waitUntilReady, writeExporterConfig, type RunningExporter } from '../helpers/exporter.js';
import { stopAllAndCheck } from './harness/processes.js';
import { startPrometheus, type RunningPrometheus } from './harness/prometheus.js';
import { currentTier, overrideVariable, partSpec } from '../../scripts/parts/index.js';
import { http, makeTempDir, removeDir, REPO_ROOT } from './harness/tools.js';
import { done, notYet, waitFor } from '../helpers/wait.js';

/** The shipped rules, timed for 10 s poll intervals: the cause fires ~40 s after the last answer, its effects after ~90 s. */
function testRuleFiles(): Map<string, string> {
  const slow = Object.fromEntries(Object.keys(THRESHOLDS.for).map((name) => [name, '1h']));
  const t = {
    ...THRESHOLDS,
    unreachableWindow: '30s',
    unreachableKeepFiringFor: '30s',
    for: { ...slow, CmdbUnreachable: '10s', CmdbEndpointDown: '90s', CmdbEndpointDataStale: '60s' },
  };
  return new Map([...renderRuleFiles(t)].filter(([file]) => file.startsWith(`${RULES_DIR}/`)));
}

let dir: string | undefined;
const sims: SimulatorServer[] = [];
let down: SimulatorServer;
let exporter: RunningExporter;
let prometheus: RunningPrometheus;
let alertmanager: RunningAlertmanager;
let receiver: CollectingReceiver;

beforeAll(async () => {
  dir = makeTempDir('alertmanager');
  const up = await startSimulator({ live: false });
  down = await startSimulator({ live: false });
  sims.push(up, down);
  const stack = (name: string, sim: SimulatorServer) => ({ name, baseUrl: sim.url, clientId: sim.clientId, secret: sim.secret, track: { assets: [], users: [] } });
  const configFile = writeExporterConfig(dir, {
    defaults: {
      rateLimitPerMinute: 6000,
      actionJobsPerMinute: 6000,
      retries: { max: 1, minDelaySeconds: 0.5, maxDelaySeconds: 1 },
      timeoutSeconds: 5,
      connectTimeoutSeconds: 2,
      intervals: FAST_INTERVALS,
    },
    stacks: [stack('up', up), stack('down', down)],
  });
  exporter = await startExporter({ args: ['--config', configFile], env: {} });
  await waitUntilReady(exporter);
  receiver = await startCollectingReceiver();
  const shipped = parse(readFileSync(join(REPO_ROOT, ALERTMANAGER_FILE), 'utf8')) as Record<string, unknown>;
  alertmanager = await startAlertmanager(dir, withWebhookReceivers(shipped, receiver.url, { group_wait: '2s', group_interval: '5s', repeat_interval: '1h' }));
  prometheus = await startPrometheus({
    dir,
    target: new URL(exporter.url).host,
    ruleFiles: testRuleFiles(),
    alertmanagers: [new URL(alertmanager.api.url).host],
  });
  await waitFor(
    'both stacks scraped with every endpoint up',
    async () => {
      const ups = await prometheus.api.query('cmdb_endpoint_up');
      const stacks = new Set(ups.map((s) => s.metric.stack));
      return stacks.size === 2 && ups.every((s) => s.value[1] === '1') ? done(undefined) : notYet(ups.map((s) => [s.metric.stack, s.metric.endpoint, s.value[1]]));
    },
    { timeoutMs: 60_000, intervalMs: 1000 },
  );
}, 240_000);

afterAll(async () => {
  await receiver?.close();
  await stopAllAndCheck(async () => {
    await Promise.all(sims.map((s) => s.close()));
    removeDir(dir);
  });
});

const what = (n: Notification) => `${n.receiver} ${n.status} ${n.groupLabels.stack ?? '-'}/${n.groupLabels.problem ?? '-'}: ${n.alerts.map((a) => `${a.labels.alertname}(${a.status})`).join(', ')}`;

async function firingFor(stack: string): Promise<string[]> {
  const alerts = await prometheus.api.alerts();
  return alerts.filter((a) => a.state === 'firing' && a.labels.stack === stack).map((a) => `${a.labels.alertname}${a.labels.endpoint ? `/${a.labels.endpoint}` : ''}`);
}

describe('the parts this file runs on', () => {
  it("are the tier's pinned Prometheus and Alertmanager (npm run test:e2e:previous runs it on the previous tier)", async () => {
    const prometheusBuild = JSON.parse((await http(`${prometheus.api.url}/api/v1/status/buildinfo`)).text) as { data: { version: string; revision: string } };
    const alertmanagerBuild = JSON.parse((await http(`${alertmanager.api.url}/api/v2/status`)).text) as { versionInfo: { version: string; revision: string } };
    console.log(`on the ${currentTier()} tier: Prometheus ${prometheusBuild.data.version}, Alertmanager ${alertmanagerBuild.versionInfo.version}`);
    // Debian's builds report their package version as the revision; a binary of one's own
    // (CMDB_PART_<NAME>) is whatever it is.
    const pinned = (name: 'prometheus' | 'alertmanager') => (process.env[overrideVariable(name)] ? undefined : partSpec(name).debian?.[0]?.version);
    if (pinned('prometheus') !== undefined) expect(prometheusBuild.data.revision).toBe(pinned('prometheus'));
    if (pinned('alertmanager') !== undefined) expect(alertmanagerBuild.versionInfo.revision).toBe(pinned('alertmanager'));
  });
});

describe('the CMDB of one of two stacks goes down, and comes back', () => {
  it('notifies once, CMDB unreachable for that stack, holds back its endpoint alerts, and resolves', async () => {
    expect(receiver.notifications.map(what), 'nothing notified before the outage').toEqual([]);
    const outageAt = Date.now();
    down.addFault({ endpoint: '*', reset: true });

    const firing = await waitFor(
      'the CMDB unreachable notification',
      async () => {
        const n = receiver.notifications.find((x) => x.status === 'firing' && x.groupLabels.problem === 'unreachable');
        return n ? done(n) : notYet(receiver.notifications.map(what));
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    expect(firing.receiver).toBe(RECEIVERS.critical);
    expect(firing.groupLabels).toEqual({ stack: 'down', problem: 'unreachable' });
    expect(firing.alerts.map((a) => a.labels.alertname)).toEqual(['CmdbUnreachable']);
    console.log(`CMDB unreachable notified ${Math.round((firing.at - outageAt) / 1000)}s after the outage began`);

    // The effects fire in Prometheus, and Alertmanager holds them back, each inhibited by the cause.
    let mostFiring: string[] = [];
    const inhibited = await waitFor(
      'the endpoint alerts of stack down firing, and inhibited in Alertmanager',
      async () => {
        const now = await firingFor('down');
        if (now.length > mostFiring.length) mostFiring = now;
        const held = (await alertmanager.api.alerts()).filter((a) => a.labels.stack === 'down' && a.labels.alertname !== 'CmdbUnreachable');
        const down = held.filter((a) => a.labels.alertname === 'CmdbEndpointDown');
        const stale = held.filter((a) => a.labels.alertname === 'CmdbEndpointDataStale');
        return down.length >= 5 && stale.length >= 5 && held.every((a) => a.status.state === 'suppressed' && a.status.inhibitedBy.length > 0)
          ? done(held)
          : notYet(held.map((a) => [a.labels.alertname, a.labels.endpoint, a.status.state]));
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    const cause = (await alertmanager.api.alerts()).find((a) => a.labels.alertname === 'CmdbUnreachable');
    expect(cause?.status.state).toBe('active');
    for (const a of inhibited) expect(a.status.inhibitedBy).toEqual([cause?.fingerprint]);
    console.log(`during the outage: ${mostFiring.length} alerts firing for stack down (${mostFiring.sort().join(', ')}), ${inhibited.length} of them inhibited`);
    expect(await firingFor('up'), 'stack up untouched').toEqual([]);

    // The CMDB answers again: one resolved notification, for the cause.
    down.clearFaults();
    const resolved = await waitFor(
      'the resolved notification',
      async () => {
        const n = receiver.notifications.find((x) => x.status === 'resolved');
        return n ? done(n) : notYet(receiver.notifications.map(what));
      },
      { timeoutMs: 180_000, intervalMs: 1000 },
    );
    expect(resolved.groupLabels).toEqual({ stack: 'down', problem: 'unreachable' });
    expect(resolved.alerts.map((a) => `${a.labels.alertname}(${a.status})`)).toEqual(['CmdbUnreachable(resolved)']);

    // Everything has resolved, and nothing else was said: one notification firing, one resolved.
    await waitFor(
      'no alert left in Prometheus or Alertmanager',
      async () => {
        const left = [...(await firingFor('down')), ...(await alertmanager.api.alerts()).map((a) => a.labels.alertname ?? '')];
        return left.length === 0 ? done(undefined) : notYet(left);
      },
      { timeoutMs: 120_000, intervalMs: 1000 },
    );
    expect(receiver.notifications.map(what)).toEqual([
      `${RECEIVERS.critical} firing down/unreachable: CmdbUnreachable(firing)`,
      `${RECEIVERS.critical} resolved down/unreachable: CmdbUnreachable(resolved)`,
    ]);
  }, 9 * 60_000);
});
