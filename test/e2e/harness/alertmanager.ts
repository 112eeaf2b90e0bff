/**
 * A real Alertmanager (the Debian package's `prometheus-alertmanager`) on a loopback port with a
 * generated copy of the shipped configuration (every receiver a webhook to a receiver the test runs,
 * timings shortened; scripts/alertmanager/config.ts withWebhookReceivers), its API, and that
 * receiver (scripts/alert-receiver.ts), keeping every notification it is sent.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { TEMPLATE_FILE } from '../../../scripts/alertmanager/config.js';
import { startWebhookReceiver, type Notification, type WebhookReceiver } from '../../../scripts/alert-receiver.js';
import { startProcess, type ManagedProcess } from './processes.js';
import { baseEnv, http, onFreePort, REPO_ROOT, requirePart } from './tools.js';
import { waitUntilServing } from './prometheus.js';

/** One alert of Alertmanager's API v2 (GET /api/v2/alerts). */
export interface AmAlert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly startsAt: string;
  readonly status: { readonly state: 'active' | 'suppressed' | 'unprocessed'; readonly inhibitedBy: string[]; readonly silencedBy: string[] };
  readonly receivers: ReadonlyArray<{ name: string }>;
  readonly fingerprint: string;
}

export class AlertmanagerApi {
  constructor(readonly url: string) {}

  /** Every alert Alertmanager holds, active, inhibited and silenced ones alike. */
  async alerts(): Promise<AmAlert[]> {
    const r = await http(`${this.url}/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true`);
    if (r.status !== 200) throw new Error(`GET /api/v2/alerts: ${r.status} ${r.text.slice(0, 300)}`);
    return JSON.parse(r.text) as AmAlert[];
  }

  /** The aggregation groups: one per receiver and group key, with the alerts in it. */
  async groups(): Promise<Array<{ labels: Record<string, string>; receiver: { name: string }; alerts: AmAlert[] }>> {
    const r = await http(`${this.url}/api/v2/alerts/groups?active=true&silenced=true&inhibited=true`);
    if (r.status !== 200) throw new Error(`GET /api/v2/alerts/groups: ${r.status} ${r.text.slice(0, 300)}`);
    return JSON.parse(r.text) as Array<{ labels: Record<string, string>; receiver: { name: string }; alerts: AmAlert[] }>;
  }

  /** Posts alerts as Prometheus does (labels, annotations, startsAt; endsAt to resolve). */
  async post(alerts: ReadonlyArray<{ labels: Record<string, string>; annotations?: Record<string, string>; startsAt?: string; endsAt?: string }>): Promise<void> {
    const r = await fetch(`${this.url}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(alerts),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`POST /api/v2/alerts: ${r.status} ${text.slice(0, 300)}`);
  }
}

export interface RunningAlertmanager {
  readonly proc: ManagedProcess;
  readonly api: AlertmanagerApi;
  readonly configFile: string;
}

/** Starts Alertmanager in `dir` with `config` (an object, written as YAML beside a copy of cmdb.tmpl). */
export async function startAlertmanager(dir: string, config: Record<string, unknown>): Promise<RunningAlertmanager> {
  const bin = requirePart('alertmanager');
  const configFile = join(dir, 'alertmanager.yml');
  writeFileSync(configFile, stringify(config));
  copyFileSync(join(REPO_ROOT, 'config/alertmanager', TEMPLATE_FILE), join(dir, TEMPLATE_FILE));
  return onFreePort(async (port) => {
    const proc = startProcess('alertmanager', bin, [
      `--config.file=${configFile}`,
      `--storage.path=${join(dir, 'alertmanager-data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // No cluster: one Alertmanager, no gossip port.
      '--cluster.listen-address=',
      '--log.level=warn',
    ], { cwd: dir, env: baseEnv() });
    const api = new AlertmanagerApi(`http://127.0.0.1:${port}`);
    await waitUntilServing(proc, api.url);
    return { proc, api, configFile };
  });
}

export interface CollectingReceiver extends WebhookReceiver {
  /** Every notification so far, in the order they arrived. */
  readonly notifications: Notification[];
}

/** The webhook receiver of scripts/alert-receiver.ts, keeping what it is sent. */
export async function startCollectingReceiver(): Promise<CollectingReceiver> {
  const notifications: Notification[] = [];
  const receiver = await startWebhookReceiver((n) => notifications.push(n));
  return { ...receiver, notifications };
}

export type { Notification };
