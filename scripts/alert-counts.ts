/**
 * How many alerts fire and how many notifications reach a person, for the demo's designed failures
 * and for a CMDB outage of one of two stacks: the figures of issue 29 (docs/alertmanager.md).
 *
 *   npx tsx scripts/alert-counts.ts --scenario demo|outage --rules DIR --alertmanager shipped|plain [--minutes N]
 *
 * It runs the simulator(s) and the exporter in-process, a real Prometheus with the rule files of DIR
 * (cmdb-rules.yml, cmdb-alerts.yml: the shipped ones, or an older release's) and a real Alertmanager
 * with either the shipped configuration or a plain one (one receiver, grouped by alert name, as in
 * Alertmanager's own example), each receiver a webhook to a receiver here that counts what arrives.
 * - demo: the demo's simulator (seed 42, live) and configuration, every for: cut to at most 30 s as
 *   the demo does; counted for --minutes (default 5) from the start.
 * - outage: two stacks polled every 10 s, every duration of the rules (for:, keep_firing_for:, range
 *   windows) divided by 10 to match; after 2 minutes the CMDB of one stack resets every connection
 *   for --minutes (default 4), then answers again for 3 minutes; counted from the outage on.
 * Group timings: group_wait 10 s (3 s for outage), group_interval 30 s, repeat_interval 4 h.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import { start, type App } from '../src/app.js';
import { loadConfig } from '../src/config/load.js';
import type { ExporterConfig, StackConfig } from '../src/config/types.js';
import { startSimulator, type SimulatorServer } from '../src/simulator/server.js';
import { startWebhookReceiver, type Notification } from './alert-receiver.js';
import type { TestTiming } from './alertmanager/config.js';
import { demoAlertmanagerConfig, findAlertmanager } from './demo-alertmanager.js';
import { DEMO_INTERVAL_SECONDS, durationSeconds, findPrometheus } from './demo-prometheus.js';
import { childDir, freePort, startServerChild, stopAllChildren } from './demo-process.js';

type RuleFile = { groups: Array<{ interval?: string; rules: Array<Record<string, unknown>> }> };

/** `text` with every Prometheus duration turned by `f` (in seconds). */
function scaleDurations(text: string, f: (s: number) => number): string {
  return text.replace(/\b(\d+(?:ms|s|m|h|d|w|y))+\b/g, (d) => `${Math.max(1, Math.round(f(durationSeconds(d))))}s`);
}

function ruleFiles(dir: string, scenario: 'demo' | 'outage'): Map<string, string> {
  const out = new Map<string, string>();
  for (const file of ['cmdb-rules.yml', 'cmdb-alerts.yml']) {
    const doc = parse(readFileSync(join(dir, file), 'utf8')) as RuleFile;
    for (const g of doc.groups) {
      delete g.interval;
      for (const r of g.rules) {
        if (scenario === 'demo') {
          if (typeof r.for === 'string' && durationSeconds(r.for) > 30) r.for = '30s';
        } else {
          for (const k of ['for', 'keep_firing_for'] as const) if (typeof r[k] === 'string') r[k] = scaleDurations(r[k] as string, (s) => s / 10);
          // Range windows and subquery steps inside the expressions: [15m] → [90s], [10m:1m] → [60s:6s].
          r.expr = (r.expr as string).replace(/\[([^\]]+)\]/g, (_m, inner: string) => `[${scaleDurations(inner, (s) => s / 10)}]`);
        }
      }
    }
    out.set(file, stringify(doc, { lineWidth: 0 }));
  }
  return out;
}

function plainConfig(receiverUrl: string, timing: TestTiming): Record<string, unknown> {
  return { route: { receiver: 'all', group_by: ['alertname'], ...timing }, receivers: [{ name: 'all', webhook_configs: [{ url: `${receiverUrl}/all`, send_resolved: true }] }] };
}

const FAST = { inventory: 10, license: 10, connectors: 10, ingestion: 10, actions: 10, actionJobs: 10, actionJobsRefresh: 10, changes: 10 };

async function exporterFor(sims: ReadonlyArray<readonly [string, SimulatorServer]>, scenario: 'demo' | 'outage'): Promise<App> {
  const base = loadConfig({
    configFile: 'config/demo.yaml',
    env: { DEMO_LISTEN_ADDRESS: '127.0.0.1:0', DEMO_CMDB_URL: sims[0]?.[1].url ?? '', DEMO_CMDB_SECRET: sims[0]?.[1].secret ?? '' },
  });
  const template = base.stacks[0] as StackConfig;
  const stacks = sims.map(([name, sim]) => ({
    ...template,
    name,
    baseUrl: sim.url,
    track: { assets: sim.state().trackedAssets, users: sim.state().trackedUsers },
    ...(scenario === 'outage' ? { intervals: { ...template.intervals, ...FAST }, retries: { ...template.retries, max: 1, maxDelaySeconds: 1 }, connectTimeoutSeconds: 2, timeoutSeconds: 5 } : {}),
  }));
  const config: ExporterConfig = { ...base, logLevel: 'silent', stacks };
  return start({ config });
}

async function firing(prometheus: string): Promise<Array<Record<string, string>>> {
  const r = await fetch(`${prometheus}/api/v1/alerts`);
  const body = (await r.json()) as { data: { alerts: Array<{ state: string; labels: Record<string, string> }> } };
  return body.data.alerts.filter((a) => a.state === 'firing').map((a) => a.labels);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { scenario: { type: 'string' }, rules: { type: 'string' }, alertmanager: { type: 'string' }, minutes: { type: 'string' } } });
  const scenario = values.scenario === 'outage' ? 'outage' : 'demo';
  const rulesDir = values.rules ?? 'config/prometheus';
  const amKind = values.alertmanager === 'plain' ? 'plain' : 'shipped';
  const minutes = Number(values.minutes ?? (scenario === 'demo' ? 5 : 4));
  const prometheusBin = findPrometheus();
  const amBin = findAlertmanager();
  if (!prometheusBin || !amBin) throw new Error('Prometheus and Alertmanager could not be had (see above)');

  const sims: Array<readonly [string, SimulatorServer]> =
    scenario === 'demo'
      ? [['demo', await startSimulator({ seed: 42, live: true, compression: 'gzip' })]]
      : [['up', await startSimulator({ seed: 42, live: false })], ['down', await startSimulator({ seed: 43, live: false })]];
  for (const [, sim] of sims) sim.scenario.finishIngestion('success');
  const app = await exporterFor(sims, scenario);
  const notifications: Notification[] = [];
  const receiver = await startWebhookReceiver((n) => notifications.push(n));
  const timing: TestTiming = { group_wait: scenario === 'demo' ? '10s' : '3s', group_interval: '30s', repeat_interval: '4h' };
  const amDir = childDir('alert-counts-am');
  writeFileSync(join(amDir, 'alertmanager.yml'), stringify(amKind === 'plain' ? plainConfig(receiver.url, timing) : demoAlertmanagerConfig(receiver.url, timing)));
  if (amKind === 'shipped') writeFileSync(join(amDir, 'cmdb.tmpl'), readFileSync('config/alertmanager/cmdb.tmpl'));
  const amPort = await freePort();
  await startServerChild('alertmanager', amBin, [`--config.file=${join(amDir, 'alertmanager.yml')}`, `--storage.path=${join(amDir, 'data')}`, `--web.listen-address=127.0.0.1:${amPort}`, '--cluster.listen-address='], amDir, `http://127.0.0.1:${amPort}`);
  const promDir = childDir('alert-counts-prometheus');
  const rules = ruleFiles(rulesDir, scenario);
  for (const [file, text] of rules) writeFileSync(join(promDir, file), text);
  const every = `${DEMO_INTERVAL_SECONDS}s`;
  writeFileSync(
    join(promDir, 'prometheus.yml'),
    stringify({
      global: { scrape_interval: every, evaluation_interval: every },
      rule_files: [...rules.keys()],
      alerting: { alertmanagers: [{ static_configs: [{ targets: [`127.0.0.1:${amPort}`] }] }] },
      scrape_configs: [{ job_name: 'cmdb-exporter', scrape_interval: every, scrape_timeout: every, static_configs: [{ targets: [new URL(app.url ?? '').host] }] }],
    }),
  );
  const promPort = await freePort();
  const prometheus = await startServerChild('prometheus', prometheusBin, [`--config.file=${join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], promDir, `http://127.0.0.1:${promPort}`);

  const seen = new Set<string>();
  let most = 0;
  const watch = async (ms: number, only?: (l: Record<string, string>) => boolean) => {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      const now = (await firing(prometheus.url)).filter((l) => !only || only(l));
      most = Math.max(most, now.length);
      for (const l of now) seen.add(JSON.stringify(Object.entries(l).sort()));
      await sleep(2000);
    }
  };
  if (scenario === 'demo') {
    await watch(minutes * 60_000);
  } else {
    await sleep(120_000);
    notifications.length = 0;
    const down = sims[1]?.[1];
    down?.addFault({ endpoint: '*', reset: true });
    await watch(minutes * 60_000, (l) => l.stack === 'down' || l.stack === undefined);
    down?.clearFaults();
    await watch(180_000, (l) => l.stack === 'down' || l.stack === undefined);
  }
  const firingN = notifications.filter((n) => n.status === 'firing').length;
  console.log(
    JSON.stringify({
      scenario,
      rules: rulesDir,
      alertmanager: amKind,
      alertsFiringAtMost: most,
      distinctAlertsFired: seen.size,
      notifications: notifications.length,
      firingNotifications: firingN,
      resolvedNotifications: notifications.length - firingN,
      groups: [...new Set(notifications.map((n) => JSON.stringify(n.groupLabels)))],
    }),
  );
  await receiver.close();
  await app.close(0);
  for (const [, sim] of sims) await sim.close();
  await stopAllChildren();
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    console.error(err);
    await stopAllChildren();
    process.exit(1);
  },
);
