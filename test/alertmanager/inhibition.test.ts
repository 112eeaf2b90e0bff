/**
 * The shipped routing and inhibition, in a real Alertmanager (prometheus-alertmanager): alerts are
 * posted to its API as Prometheus posts them, and its API and a webhook receiver say what became
 * of them. A stack's cause (the CMDB unreachable, the credentials rejected, every request paused)
 * holds back that stack's endpoint, staleness and data alerts and nothing of another stack, and never
 * its license alerts (computed at each scrape from the stored date: true whatever the CMDB does); a
 * connector's error holds back its empty output and missing fields (that profile's only); the
 * exporter down holds back what it serves, but its own /sd target failing alone (scope="target")
 * holds back nothing (issue 37: every /sd target has the same instance, so before, it held back
 * every stack's alerts); a saved query's rise is a data alert like the others.
 * Each problem makes one notification.
 * Receivers and timings come from a generated copy (withWebhookReceivers); the shipped file is read only.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { RECEIVERS, withWebhookReceivers } from '../../scripts/alertmanager/config.js';
import { ALERTMANAGER_FILE } from '../../scripts/gen-alertmanager.js';
import { startAlertmanager, startCollectingReceiver, type AmAlert, type CollectingReceiver, type RunningAlertmanager } from '../e2e/harness/alertmanager.js';
import { stopAll } from '../e2e/harness/processes.js';
import { done, notYet, waitFor } from '../helpers/wait.js';
import { REPO } from '../dashboards/metrics.js';

const JOB = { job: 'cmdb-exporter', instance: 'cmdb-exporter:9873' };
type Labels = Record<string, string>;
const alert = (alertname: string, severity: string, problem: string, labels: Labels = {}): Labels => ({ alertname, severity, problem, ...JOB, ...labels });

/** What is posted: per case, the alerts and which of them must end up held back. */
const CAUSE_CASES = [
  ['CmdbUnreachable', 'unreachable', 'down'],
  ['CmdbTokenRejected', 'credentials', 'refused'],
  ['CmdbStackPaused', 'paused', 'paused'],
] as const;

const active: Labels[] = [];
const inhibited: Labels[] = [];
for (const [cause, problem, stack] of CAUSE_CASES) {
  active.push(alert(cause, 'critical', problem, { stack }));
  inhibited.push(
    alert('CmdbEndpointDown', 'warning', 'endpoints', { stack, endpoint: 'license' }),
    alert('CmdbEndpointDown', 'warning', 'endpoints', { stack, endpoint: 'connector' }),
    alert('CmdbEndpointDataStale', 'warning', 'endpoints', { stack, endpoint: 'data_ingestion' }),
    alert('CmdbIngestionOverdue', 'warning', 'ingestion', { stack }),
    // A saved query's rise is a data alert: the counts of a stack whose CMDB cannot be asked are frozen, not news.
    alert('CmdbQueryCountRose', 'warning', 'queries', { stack, query: 'servers-without-edr' }),
  );
}
// The license is true whatever the CMDB does: a cause of the stack holds none of its alerts back.
for (const [, , stack] of CAUSE_CASES) active.push(alert('CmdbLicenseExpired', 'critical', 'license', { stack }));
active.push(alert('CmdbLicenseExpiresSoon', 'warning', 'license', { stack: 'down' }));
// With /sd, every target of the exporter has its address as instance: its own target failing alone
// (the process answers its stacks' targets) holds back nothing, not even on its own instance.
active.push(alert('CmdbExporterDown', 'critical', 'exporter', { scope: 'target' }));
// The cause of one stack says nothing of another.
active.push(alert('CmdbEndpointDown', 'warning', 'endpoints', { stack: 'fine', endpoint: 'license' }));
// Two saved queries of one stack rising at the same rebuild: one notification.
active.push(
  alert('CmdbQueryCountRose', 'warning', 'queries', { stack: 'fine', query: 'servers-without-edr' }),
  alert('CmdbQueryCountRose', 'warning', 'queries', { stack: 'fine', query: 'high-risk-users' }),
);
// A connector's error: its other alerts on that profile are its effects; another profile's are not.
const connector = { stack: 'fine', connector: 'jamf' };
active.push(alert('CmdbConnectorError', 'warning', 'connector', { ...connector, profile: 'prod', health: 'error' }));
inhibited.push(alert('CmdbConnectorNoOutput', 'warning', 'connector', { ...connector, profile: 'prod' }), alert('CmdbConnectorMissingFields', 'info', 'connector', { ...connector, profile: 'prod' }));
active.push(alert('CmdbConnectorNoOutput', 'warning', 'connector', { ...connector, profile: 'staging' }));
// Another exporter process, not scraped: what it serves is held back, its own alert is not. With
// /sd, each target fires (scope="exporter": no target of its address answers); without the scope
// label (rules from before it), the target without stack still holds back everything it serves.
const other = { job: 'cmdb-exporter', instance: 'other:9873' };
active.push({ ...alert('CmdbExporterDown', 'critical', 'exporter', { scope: 'exporter' }), ...other });
active.push({ ...alert('CmdbExporterDown', 'critical', 'exporter', { scope: 'exporter', stack: 'served-by-other' }), ...other });
inhibited.push({ ...alert('CmdbEndpointDown', 'warning', 'endpoints', { stack: 'served-by-other', endpoint: 'license' }), ...other });
inhibited.push({ ...alert('CmdbEndpointDown', 'warning', 'endpoints', { stack: 'also-served-by-other', endpoint: 'license' }), ...other });
// Its license data is not scraped either: the alert would soon read "resolved" without being so.
inhibited.push({ ...alert('CmdbLicenseExpired', 'critical', 'license', { stack: 'served-by-other' }), ...other });
const legacy = { job: 'cmdb-exporter', instance: 'legacy:9873' };
active.push({ ...alert('CmdbExporterDown', 'critical', 'exporter'), ...legacy });
inhibited.push({ ...alert('CmdbEndpointDown', 'warning', 'endpoints', { stack: 'served-by-legacy', endpoint: 'license' }), ...legacy });
// One stack's own target failing alone (scope="target"): that stack's alerts, no other stack's.
const sd = { job: 'cmdb-exporter', instance: 'sd:9873' };
active.push({ ...alert('CmdbExporterDown', 'critical', 'exporter', { scope: 'target', stack: 'blind' }), ...sd });
inhibited.push({ ...alert('CmdbEndpointDown', 'warning', 'endpoints', { stack: 'blind', endpoint: 'license' }), ...sd });
active.push({ ...alert('CmdbEndpointDown', 'warning', 'endpoints', { stack: 'seen', endpoint: 'license' }), ...sd });

let dir: string;
let receiver: CollectingReceiver;
let am: RunningAlertmanager;
let alerts: AmAlert[];

const key = (l: Labels) => JSON.stringify(Object.entries(l).sort());

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cmdb-am-inhibition-'));
  receiver = await startCollectingReceiver();
  const shipped = parse(readFileSync(new URL(ALERTMANAGER_FILE, REPO), 'utf8')) as Record<string, unknown>;
  // Long intervals: each group notifies once, after a short wait that lets every alert arrive.
  am = await startAlertmanager(dir, withWebhookReceivers(shipped, receiver.url, { group_wait: '2s', group_interval: '1h', repeat_interval: '24h' }));
  await am.api.post([...active, ...inhibited].map((labels) => ({ labels, annotations: { summary: labels.alertname ?? '' } })));
  const want = active.length + inhibited.length;
  alerts = await waitFor(
    'Alertmanager to hold every posted alert, with the inhibitions applied',
    async () => {
      const held = await am.api.alerts();
      const settled = held.length === want && held.filter((a) => a.status.inhibitedBy.length > 0).length === inhibited.length;
      return settled ? done(held) : notYet(held.map((a) => [a.labels.alertname, a.labels.stack, a.status]));
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}, 60_000);

afterAll(async () => {
  await stopAll();
  await receiver?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the shipped Alertmanager configuration, in Alertmanager', () => {
  it('holds back exactly the effects, each by its cause', () => {
    const byKey = new Map(alerts.map((a) => [key(a.labels), a]));
    for (const labels of inhibited) expect(byKey.get(key(labels))?.status.inhibitedBy.length, `${labels.alertname} of ${labels.stack} held back`).toBeGreaterThan(0);
    for (const labels of active) expect(byKey.get(key(labels))?.status.state, `${labels.alertname} of ${labels.stack} active`).toBe('active');
  });

  it('sends one notification per problem of a stack, to the receiver of its severity, and none for the effects', async () => {
    // Three causes; the license of each of their stacks (two receivers for "down"); the exporters'
    // own targets, with a stack and without; endpoints of "fine" and of "seen", connector jamf of
    // "fine", queries of "fine".
    const expected = 3 + 4 + 3 + 4;
    const got = await waitFor(
      `${expected} notifications`,
      async () => (receiver.notifications.length >= expected ? done([...receiver.notifications]) : notYet(receiver.notifications.map((n) => n.groupLabels))),
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const summary = got.map((n) => `${n.receiver} ${n.groupLabels.stack ?? '-'}/${n.groupLabels.problem}${n.groupLabels.connector ? `/${n.groupLabels.connector}` : ''}: ${n.alerts.map((a) => a.labels.alertname).sort().join(',')}`).sort();
    // Exactly the groups with an alert that is not held back notify: the others have nothing to say.
    const groups = await am.api.groups();
    const speaking = groups.filter((g) => g.alerts.some((a) => a.status.state === 'active'));
    expect(speaking.length).toBe(expected);
    expect(got.length).toBe(expected);
    expect(summary).toEqual([
      `${RECEIVERS.critical} -/exporter: CmdbExporterDown,CmdbExporterDown,CmdbExporterDown`,
      `${RECEIVERS.critical} blind/exporter: CmdbExporterDown`,
      `${RECEIVERS.critical} down/license: CmdbLicenseExpired`,
      `${RECEIVERS.critical} down/unreachable: CmdbUnreachable`,
      `${RECEIVERS.critical} paused/license: CmdbLicenseExpired`,
      `${RECEIVERS.critical} paused/paused: CmdbStackPaused`,
      `${RECEIVERS.critical} refused/credentials: CmdbTokenRejected`,
      `${RECEIVERS.critical} refused/license: CmdbLicenseExpired`,
      `${RECEIVERS.critical} served-by-other/exporter: CmdbExporterDown`,
      `${RECEIVERS.warning} down/license: CmdbLicenseExpiresSoon`,
      `${RECEIVERS.warning} fine/connector/jamf: CmdbConnectorError,CmdbConnectorNoOutput`,
      `${RECEIVERS.warning} fine/endpoints: CmdbEndpointDown`,
      `${RECEIVERS.warning} fine/queries: CmdbQueryCountRose,CmdbQueryCountRose`,
      `${RECEIVERS.warning} seen/endpoints: CmdbEndpointDown`,
    ]);
  });
});
