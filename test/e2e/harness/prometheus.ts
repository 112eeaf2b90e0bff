/**
 * A real Prometheus (the Debian package's `prometheus` binary) on a loopback port, with a generated
 * configuration that scrapes one exporter as job `cmdb-exporter`, the project's generated rule files,
 * and a temporary TSDB; plus the few HTTP API calls the tests make.
 */
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { stringify } from 'yaml';
import { RULES_DIR, renderRuleFiles, THRESHOLDS } from '../../../scripts/gen-rules.js';
import { part, type Tier } from '../../../scripts/parts/index.js';
import { startProcess, type ManagedProcess } from './processes.js';
import { done, notYet, StopWaiting, waitFor } from '../../helpers/wait.js';
import { baseEnv, http, onFreePort, requirePart } from './tools.js';

/** The job name the generated rules select (THRESHOLDS.jobSelector). */
export const JOB = 'cmdb-exporter';

/**
 * The project's generated Prometheus rule files (not the Kubernetes PrometheusRule made from the
 * same rules) with every `for:` at 0s, so that an alert fires at its first true evaluation.
 */
export function fastRuleFiles(): Map<string, string> {
  const fast = { ...THRESHOLDS, for: Object.fromEntries(Object.keys(THRESHOLDS.for).map((name) => [name, '0s'])) };
  return new Map([...renderRuleFiles(fast)].filter(([file]) => file.startsWith(`${RULES_DIR}/`)));
}

export interface PrometheusSetup {
  /** Temporary directory: config, rule files and TSDB go here. */
  readonly dir: string;
  /** host:port of the exporter. */
  readonly target: string;
  /** Rule files by any path; each is written under its base name. */
  readonly ruleFiles: ReadonlyMap<string, string>;
  readonly interval?: string;
  /** Extra keys of the scrape config (scheme, basic_auth, tls_config), for an exporter behind TLS. */
  readonly scrape?: Readonly<Record<string, unknown>>;
  /** The `cmdb-exporter` job as a whole instead of the static target (an http_sd_configs job). */
  readonly job?: Readonly<Record<string, unknown>>;
  /** More scrape jobs next to `cmdb-exporter` (each with its own job_name, targets and keys). */
  readonly extraJobs?: ReadonlyArray<Readonly<Record<string, unknown>>>;
  /** Takes remote write (--web.enable-remote-write-receiver), with this out-of-order window (`30d`). */
  readonly remoteWrite?: { readonly outOfOrderTimeWindow: string };
  /** No scrape job at all (a Prometheus that only holds what is written into it). */
  readonly noScrape?: boolean;
  /** host:port of Alertmanagers to send the alerts to. */
  readonly alertmanagers?: readonly string[];
  /** More command-line flags (`--enable-feature=native-histograms`). */
  readonly args?: readonly string[];
  /** The Prometheus of this tier of the parts (default: CMDB_PARTS_TIER's): a test that proves a behaviour on 3.5.3 and 2.42 alike. */
  readonly tier?: Tier;
  /** The scrape configurations as they are, instead of the `cmdb-exporter` job (a prometheus-operator ServiceMonitor's job, relabelled). */
  readonly scrapeConfigs?: ReadonlyArray<Readonly<Record<string, unknown>>>;
}

export interface Series {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

/** A series' raw samples, as a range selector returns them: [unix seconds, value]. */
export interface RangeSeries {
  readonly metric: Record<string, string>;
  readonly values: ReadonlyArray<[number, string]>;
}

export interface Alert {
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly state: 'pending' | 'firing' | string;
  readonly value: string;
}

/** What the scraped targets declared of one metric family (GET /api/v1/metadata): one entry per distinct declaration. */
export interface Metadata {
  readonly type: string;
  readonly help: string;
  readonly unit: string;
}

export interface Target {
  readonly labels: Record<string, string>;
  readonly scrapeUrl: string;
  readonly health: 'up' | 'down' | 'unknown';
  readonly lastError: string;
}

interface ApiReply<T> {
  status: 'success' | 'error';
  data: T;
  error?: string;
  errorType?: string;
}

export class PrometheusApi {
  constructor(readonly url: string) {}

  private async get<T>(path: string): Promise<T> {
    const r = await http(`${this.url}${path}`);
    let body: ApiReply<T>;
    try {
      body = JSON.parse(r.text) as ApiReply<T>;
    } catch {
      throw new Error(`GET ${path}: ${r.status}, not JSON: ${r.text.slice(0, 500)}`);
    }
    if (r.status !== 200 || body.status !== 'success') {
      throw new Error(`GET ${path}: ${r.status} ${body.errorType ?? ''} ${body.error ?? r.text.slice(0, 500)}`);
    }
    return body.data;
  }

  /** Instant query; the result of a vector expression. */
  async query(expr: string): Promise<Series[]> {
    const data = await this.get<{ resultType: string; result: Series[] | [number, string] }>(
      `/api/v1/query?query=${encodeURIComponent(expr)}`,
    );
    if (data.resultType === 'scalar') return [{ metric: {}, value: data.result as [number, string] }];
    return data.result as Series[];
  }

  /** The raw samples a range selector (`x{…}[10m]`) holds, each as Prometheus stored it. */
  async rawSamples(rangeSelector: string): Promise<RangeSeries[]> {
    const data = await this.get<{ resultType: string; result: RangeSeries[] }>(`/api/v1/query?query=${encodeURIComponent(rangeSelector)}`);
    if (data.resultType !== 'matrix') throw new Error(`${rangeSelector}: a ${data.resultType}, not raw samples`);
    return data.result;
  }

  async alerts(): Promise<Alert[]> {
    return (await this.get<{ alerts: Alert[] }>('/api/v1/alerts')).alerts;
  }

  /** The metric families its targets declared (type, help, unit), by family name, as Prometheus keeps them. */
  async metadata(): Promise<Record<string, Metadata[]>> {
    return this.get<Record<string, Metadata[]>>('/api/v1/metadata');
  }

  async targets(): Promise<Target[]> {
    return (await this.get<{ activeTargets: Target[] }>('/api/v1/targets?state=active')).activeTargets;
  }
}

export interface RunningPrometheus {
  readonly proc: ManagedProcess;
  readonly api: PrometheusApi;
}

function writeConfig(setup: PrometheusSetup): string {
  const interval = setup.interval ?? '2s';
  const ruleNames: string[] = [];
  for (const [path, text] of setup.ruleFiles) {
    const name = basename(path);
    writeFileSync(join(setup.dir, name), text);
    ruleNames.push(name);
  }
  const config = {
    global: { scrape_interval: interval, evaluation_interval: interval },
    rule_files: ruleNames,
    ...(setup.remoteWrite ? { storage: { tsdb: { out_of_order_time_window: setup.remoteWrite.outOfOrderTimeWindow } } } : {}),
    ...(setup.alertmanagers ? { alerting: { alertmanagers: [{ static_configs: [{ targets: [...setup.alertmanagers] }] }] } } : {}),
    scrape_configs: setup.scrapeConfigs ?? (setup.noScrape ? [] : [
      setup.job
        ? { ...setup.job, job_name: JOB, scrape_interval: interval, scrape_timeout: interval }
        : { job_name: JOB, scrape_interval: interval, scrape_timeout: interval, static_configs: [{ targets: [setup.target] }], ...setup.scrape },
      ...(setup.extraJobs ?? []).map((job) => ({ scrape_interval: interval, scrape_timeout: interval, ...job })),
    ]),
  };
  const file = join(setup.dir, 'prometheus.yml');
  writeFileSync(file, stringify(config));
  return file;
}

export async function startPrometheus(setup: PrometheusSetup): Promise<RunningPrometheus> {
  const bin = setup.tier ? part('prometheus', setup.tier) : requirePart('prometheus');
  const configFile = writeConfig(setup);
  return onFreePort(async (port) => {
    const proc = startProcess('prometheus', bin, [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(setup.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
      ...(setup.remoteWrite ? ['--web.enable-remote-write-receiver'] : []),
      ...(setup.args ?? []),
    ], { cwd: setup.dir, env: baseEnv() });
    const api = new PrometheusApi(`http://127.0.0.1:${port}`);
    await waitUntilServing(proc, api.url);
    return { proc, api };
  });
}

/** Until a Prometheus or Alertmanager child answers 200 on /-/ready (fails when it exits first). */
export async function waitUntilServing(proc: ManagedProcess, url: string): Promise<void> {
  await waitFor(
    `${proc.name} /-/ready`,
    async () => {
      if (proc.hasExited) throw new StopWaiting(`${proc.name} exited\n${proc.tail()}`);
      const r = await http(`${url}/-/ready`, { timeoutMs: 2000 });
      return r.status === 200 ? done(undefined) : notYet(`${r.status} ${r.text}`);
    },
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}
