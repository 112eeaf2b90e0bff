/**
 * The Helm chart (deploy/helm/cmdb-exporter), rendered offline by real Helm 4 and Helm 3 (the npm
 * devDependencies carry both, scripts/helm/binary.ts) for every values file of its ci/ folder:
 * `helm lint --strict`, every object valid against the Kubernetes and prometheus-operator schemas,
 * both majors rendering the same objects, the PrometheusRule holding every shipped alert, the
 * AlertmanagerConfig the shipped routing, and the exporter itself accepting what the chart wires
 * into its pods (--check-config). There is no cluster here: nothing is applied (docs/kubernetes.md).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { helmVersion, helmBinary } from '../../scripts/helm/binary.js';
import { renderChartFiles } from '../../scripts/gen-chart.js';
import { CHART, CI_FILES, cleanHelmHome, helm, HELM_MAJORS, MINIMAL, NAMESPACE, render, template } from './helm.js';
import { find, parseObjects, ROOT, validateAll, workloadOf, type Obj } from './manifests.js';

const run = promisify(execFile);
const rendered = new Map<string, Obj[]>();
const texts = new Map<string, string>();
const key = (major: number, file: string) => `${major}:${file}`;
const objsOf = (file: string, major = 4) => rendered.get(key(major, file)) ?? [];

beforeAll(async () => {
  for (const major of HELM_MAJORS) {
    for (const file of CI_FILES) {
      const r = await template(major, { files: [file] });
      if (r.code !== 0) throw new Error(`helm ${major} template -f ci/${file}: ${r.stderr}`);
      texts.set(key(major, file), r.stdout);
      rendered.set(key(major, file), parseObjects(r.stdout));
    }
  }
}, 120_000);

afterAll(cleanHelmHome);

describe('npm run helm', () => {
  it('runs Helm 4 (npm run helm) and Helm 3 (npm run helm3), from the npm devDependencies alone', async () => {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!/^npm_/i.test(k)) env[k] = v;
    const [four, three] = await Promise.all(
      ['helm', 'helm3'].map((script) => run('npm', ['run', '-s', script, '--', 'version', '--short'], { cwd: ROOT, env, timeout: 120_000 })),
    );
    expect(four?.stdout).toMatch(/^v4\.\d+\.\d+/);
    expect(three?.stdout).toMatch(/^v3\.\d+\.\d+/);
    expect(helmVersion(helmBinary(4))).toBe(four?.stdout.trim().replace(/\+.*/, ''));
  });
});

describe.each(CI_FILES)('ci/%s', (file) => {
  it.each(HELM_MAJORS)('Helm %i renders objects that are each valid against their schema, with every placeholder replaced', async (major) => {
    const objs = objsOf(file, major);
    expect(objs.length).toBeGreaterThan(3);
    await validateAll(objs);
    expect(texts.get(key(major, file))).not.toMatch(/CMDB_CHART_|cmdb-chart-|\.invalid/);
    for (const o of objs.filter((x) => x.metadata?.name !== 'cmdb-exporter-extra')) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe(NAMESPACE);
    // One workload, one scraper at most: two would store every series twice.
    workloadOf(objs);
    expect([...find(objs, 'ServiceMonitor'), ...find(objs, 'PodMonitor'), ...find(objs, 'ScrapeConfig')].length).toBeLessThanOrEqual(1);
  });

  it('Helm 3 renders the same objects as Helm 4', () => {
    expect(objsOf(file, 3)).toEqual(objsOf(file, 4));
  });

  it.each(HELM_MAJORS)('passes helm lint --strict with Helm %i', async (major) => {
    const r = await helm(major, ['lint', '--strict', CHART, '--namespace', NAMESPACE, '-f', join(CHART, 'ci', file)]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('0 chart(s) failed');
  });
});

describe('helm package', () => {
  it.each(HELM_MAJORS)('Helm %i packages the chart, and the package renders what the folder renders', async (major) => {
    const dir = mkdtempSync(join(tmpdir(), 'cmdb-helm-package-'));
    try {
      const r = await helm(major, ['package', CHART, '--destination', dir]);
      expect(r.code, r.stderr).toBe(0);
      const [tgz] = readdirSync(dir);
      expect(tgz).toBe(`cmdb-exporter-${(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}.tgz`);
      const packaged = await helm(major, ['template', 'cmdb-exporter', join(dir, tgz ?? ''), '--namespace', NAMESPACE, '-f', join(CHART, 'ci', MINIMAL)]);
      expect(packaged.code, packaged.stderr).toBe(0);
      expect(packaged.stdout).toBe(texts.get(key(major, MINIMAL)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the defaults', () => {
  it.each(HELM_MAJORS)('refuse to render with Helm %i, naming the image, the stacks\' baseUrl and the Secret to set', async (major) => {
    const r = await template(major, { files: [] });
    expect(r.code, r.stdout.slice(0, 300)).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('execution error');
    expect(r.stderr).toContain('the chart has no default for these');
    for (const item of ['\n- image.repository: ', '\n- config.stacks: ', 'config.stacks[].baseUrl', '\n- secrets.existingSecret: ']) expect(r.stderr).toContain(item);
  });

  it('with what only the user knows (ci/minimal-values.yaml): a Deployment, a Service, a ServiceMonitor, a PrometheusRule, the configuration and the dashboards', () => {
    const kinds = objsOf(MINIMAL).map((o) => o.kind).sort();
    expect(kinds).toEqual(['ConfigMap', 'ConfigMap', 'ConfigMap', 'ConfigMap', 'Deployment', 'PrometheusRule', 'Service', 'ServiceMonitor']);
    const w = workloadOf(objsOf(MINIMAL));
    expect(w.spec.replicas).toBe(1);
    expect(w.spec.strategy).toEqual({ type: 'Recreate' });
    const pod = w.spec.template.spec as Obj;
    expect((pod.containers as Obj[])[0]?.image).toMatch(/^registry\.example\.com\/cmdb-exporter:/);
    expect((pod.volumes as Obj[]).find((v) => v.name === 'secrets')?.secret.secretName).toBe('cmdb-credentials');
  });

  it('are values.yaml, which the generator writes from the same tree as values.schema.json', () => {
    const generated = renderChartFiles();
    for (const [file, text] of generated) expect(readFileSync(join(ROOT, file), 'utf8'), `${file} is out of date: run npm run chart`).toBe(text);
  });
});

type Rule = { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
type Groups = { groups: Array<{ name: string; rules: Rule[] }> };
const shipped = (file: string) => (parse(readFileSync(join(ROOT, 'config/prometheus', file), 'utf8')) as Groups).groups;
const ruleGroups = (objs: Obj[]) => (find(objs, 'PrometheusRule')[0]?.spec.groups ?? []) as Groups['groups'];

describe('the PrometheusRule', () => {
  it('holds every alert of config/prometheus/cmdb-alerts.yml, selecting the release namespace and labelled with it', () => {
    const chart = new Map(ruleGroups(objsOf(MINIMAL)).flatMap((g) => g.rules).map((r) => [r.alert ?? r.record, r]));
    const alerts = shipped('cmdb-alerts.yml').flatMap((g) => g.rules);
    expect(alerts.length).toBeGreaterThan(25);
    const scoped = (expr: string) => expr.replaceAll('job="cmdb-exporter"', `job="cmdb-exporter", namespace="${NAMESPACE}"`);
    for (const alert of alerts) {
      const mine = chart.get(alert.alert);
      expect(mine, alert.alert).toBeDefined();
      expect(mine).toEqual({ ...alert, expr: scoped(alert.expr), labels: { ...alert.labels, namespace: NAMESPACE } });
    }
    for (const rule of shipped('cmdb-rules.yml').flatMap((g) => g.rules)) expect(chart.get(rule.record)).toEqual({ ...rule, expr: scoped(rule.expr) });
  });

  it('is config/prometheus exactly with namespaceScoped: false; alertLabels and disabledAlerts apply to the alerts only', async () => {
    const plain = ruleGroups(await render(4, { values: { prometheusRule: { namespaceScoped: false } } }));
    expect(plain).toEqual([...shipped('cmdb-rules.yml'), ...shipped('cmdb-alerts.yml')]);
    const tuned = ruleGroups(objsOf('created-secret-values.yaml')).flatMap((g) => g.rules);
    expect(tuned.map((r) => r.alert)).not.toContain('CmdbQueryCountRose');
    for (const r of tuned) if (r.alert) expect(r.labels).toMatchObject({ team: 'cmdb', namespace: NAMESPACE });
    // The shipped labels, which the routing reads, win over alertLabels.
    const overridden = ruleGroups(await render(4, { values: { prometheusRule: { alertLabels: { severity: 'none' } } } })).flatMap((g) => g.rules);
    expect(overridden.find((r) => r.alert === 'CmdbExporterDown')?.labels?.severity).toBe('critical');
  });
});

/** An Alertmanager matcher string as the CRD spells it: { name, matchType, value }. */
function crd(matcher: string): Obj {
  const m = /^([a-z_]+)(=~|!~|!=|=)"(.*)"$/.exec(matcher);
  if (!m) throw new Error(`test cannot parse ${matcher}`);
  return { name: m[1], matchType: m[2], value: JSON.parse(`"${m[3]}"`) as string };
}

describe('the AlertmanagerConfig', () => {
  const am = parse(readFileSync(join(ROOT, 'config/alertmanager/alertmanager.yml'), 'utf8')) as Obj;

  it('routes and inhibits as config/alertmanager/alertmanager.yml does', () => {
    const [amc] = find(objsOf('created-secret-values.yaml'), 'AlertmanagerConfig');
    const route = (r: Obj): Obj => ({
      receiver: r.receiver,
      ...(r.group_by ? { groupBy: r.group_by } : {}),
      ...(r.group_wait ? { groupWait: r.group_wait } : {}),
      ...(r.group_interval ? { groupInterval: r.group_interval } : {}),
      ...(r.repeat_interval ? { repeatInterval: r.repeat_interval } : {}),
      ...(r.matchers ? { matchers: (r.matchers as string[]).map(crd) } : {}),
      ...(r.routes ? { routes: (r.routes as Obj[]).map(route) } : {}),
    });
    expect(amc?.spec.route).toEqual(route(am.route));
    expect(amc?.spec.inhibitRules).toEqual(
      (am.inhibit_rules as Obj[]).map((r) => ({ sourceMatch: (r.source_matchers as string[]).map(crd), targetMatch: (r.target_matchers as string[]).map(crd), equal: r.equal })),
    );
  });

  it('has the shipped receivers: Slack URLs from the Secret, SMTP settings on each e-mail, cmdb.tmpl only with templates: true', async () => {
    const [withTemplates] = find(objsOf('created-secret-values.yaml'), 'AlertmanagerConfig');
    const [plain] = find(await render(4, { values: { alertmanagerConfig: { enabled: true } } }), 'AlertmanagerConfig');
    const names = (am.receivers as Obj[]).map((r) => r.name);
    for (const amc of [withTemplates, plain]) expect((amc?.spec.receivers as Obj[]).map((r) => r.name)).toEqual(names);
    const critical = (withTemplates?.spec.receivers as Obj[]).find((r) => r.name === 'cmdb-critical');
    const shippedCritical = (am.receivers as Obj[]).find((r) => r.name === 'cmdb-critical') as Obj;
    expect(critical?.slackConfigs[0].apiURL).toEqual({ name: 'cmdb-alertmanager', key: 'slack-critical-webhook-url' });
    expect(critical?.slackConfigs[0].title).toBe(shippedCritical.slack_configs[0].title);
    expect(critical?.emailConfigs[0]).toMatchObject({ to: shippedCritical.email_configs[0].to, smarthost: am.global.smtp_smarthost, from: am.global.smtp_from, requireTLS: true });
    expect(JSON.stringify(withTemplates?.spec.receivers)).toContain('{{ template \\"cmdb.');
    expect(JSON.stringify(plain?.spec.receivers)).not.toContain('{{');
    // The templates it names, with the Grafana URL of the values.
    const [templates] = find(objsOf('created-secret-values.yaml'), 'ConfigMap', 'cmdb-exporter-alertmanager-templates');
    expect(templates?.data['cmdb.tmpl']).toContain('{{ define "cmdb.slack.title" }}');
    expect(templates?.data['cmdb.tmpl']).toContain('https://grafana.example.com/d/');
  });
});

describe('the modes', () => {
  it('sharded: a StatefulSet whose shard count is its replicas, a claim per pod, and a /sd per pod', () => {
    const objs = objsOf('sharded-values.yaml');
    const w = workloadOf(objs);
    expect(w.kind).toBe('StatefulSet');
    const [c] = w.spec.template.spec.containers as Obj[];
    expect(c?.env).toEqual([
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'EXPORTER_TOTAL_SHARDS', value: String(w.spec.replicas) },
    ]);
    expect(c?.args).toContain('--shard-from-pod-name');
    expect(w.spec.volumeClaimTemplates.map((t: Obj) => [t.metadata.name, t.spec.resources.requests.storage])).toEqual([['state', '2Gi']]);
    expect(find(objs, 'PersistentVolumeClaim')).toEqual([]);
    const headless = find(objs, 'Service', `${w.metadata.name}-headless`)[0];
    expect(w.spec.serviceName).toBe(headless?.metadata.name);
    expect(headless?.spec.clusterIP).toBe('None');
    // Each pod hands out its own DNS name in /sd; the ScrapeConfig asks every pod.
    expect(c?.args).toContain(`--web.external-url=http://$(POD_NAME).${headless?.metadata.name}.${NAMESPACE}.svc:9873`);
    const [sc] = find(objs, 'ScrapeConfig');
    expect((sc?.spec.httpSDConfigs as Obj[]).map((h) => h.url)).toEqual(
      [0, 1, 2].map((i) => `http://${w.metadata.name}-${i}.${headless?.metadata.name}.${NAMESPACE}.svc:9873/sd`),
    );
    // The ServiceMonitor path selects the metrics Service only, never the headless one.
    expect(headless?.metadata.labels['app.kubernetes.io/component']).not.toBe('metrics');
  });

  it('per stack with a ServiceMonitor: an endpoint per stack of the configuration and one for the exporter', () => {
    const objs = objsOf('per-stack-servicemonitor-values.yaml');
    const [sm] = find(objs, 'ServiceMonitor');
    const endpoints = sm?.spec.endpoints as Obj[];
    expect(endpoints.map((e) => e.params)).toEqual([{ stack: ['prod'] }, { stack: ['eu:prod'] }, { only: ['exporter'] }]);
    for (const e of endpoints) {
      expect(e.honorLabels).toBe(true);
      expect(e.relabelings.at(-1)).toEqual({ targetLabel: 'job', replacement: 'cmdb-exporter' });
    }
    expect(endpoints[1]?.relabelings[0]).toEqual({ targetLabel: 'stack', replacement: 'eu:prod' });
    const [svc] = find(objs, 'Service');
    for (const [k, v] of Object.entries(sm?.spec.selector.matchLabels as Record<string, string>)) expect(svc?.metadata.labels[k]).toBe(v);
  });

  it('TLS and basic auth: the web config mounted and passed, HTTPS scrapes with the password, probes that need none', () => {
    const objs = objsOf('tls-values.yaml');
    const pod = workloadOf(objs).spec.template.spec as Obj;
    const [c] = pod.containers as Obj[];
    expect(c?.args.slice(c.args.indexOf('--web.config.file'), c.args.indexOf('--web.config.file') + 2)).toEqual(['--web.config.file', '/etc/cmdb-exporter/web/web-config.yml']);
    expect(c?.livenessProbe.tcpSocket).toEqual({ port: 'http' });
    expect(c?.readinessProbe.tcpSocket).toEqual({ port: 'http' });
    const [sm] = find(objs, 'ServiceMonitor');
    expect(sm?.spec.endpoints[0]).toMatchObject({ scheme: 'https', basicAuth: { password: { name: 'cmdb-exporter-scrape', key: 'password' } } });
    const web = parse(find(objs, 'Secret', 'cmdb-exporter-web-config')[0]?.stringData['web-config.yml']) as Obj;
    expect(web.tls_server_config).toEqual({ cert_file: '/etc/cmdb-exporter/tls/tls.crt', key_file: '/etc/cmdb-exporter/tls/tls.key' });
    expect((pod.volumes as Obj[]).find((v) => v.name === 'tls')?.secret.secretName).toBe('cmdb-exporter-tls');
    // TLS without a password: HTTPS probes.
    return render(4, { values: { webConfig: { tlsSecret: 'x' } } }).then((o) => {
      const [tc] = workloadOf(o).spec.template.spec.containers as Obj[];
      expect(tc?.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http', scheme: 'HTTPS' });
      expect(find(o, 'ServiceMonitor')[0]?.spec.endpoints[0].scheme).toBe('https');
    });
  });

  it('the chart\'s Secret: secrets.data and the stacks\' inline secrets, which the configuration then reads from files', () => {
    const objs = objsOf('created-secret-values.yaml');
    const [secret] = find(objs, 'Secret', 'cmdb-exporter');
    const data = Object.fromEntries(Object.entries(secret?.data as Record<string, string>).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
    expect(data).toEqual({ cmdb_secret: 'not-a-real-secret', 'dev_1-secret': 'also-not-a-real-secret' });
    const config = parse(find(objs, 'ConfigMap', 'cmdb-exporter-config')[0]?.data['exporter.yaml']) as Obj;
    expect(config.stacks.map((s: Obj) => s.secretFile ?? s.secret)).toEqual(['/etc/cmdb-exporter/secrets/cmdb_secret', '/etc/cmdb-exporter/secrets/dev_1-secret', '${CMDB_ENV_SECRET}']);
    expect(JSON.stringify(find(objs, 'ConfigMap'))).not.toContain('not-a-real-secret');
  });
});

describe('docs/kubernetes.md', () => {
  it('its my-values.yaml renders on its own, and its commands create the Secret it mounts, with the key the stack reads', async () => {
    const doc = readFileSync(join(ROOT, 'docs/kubernetes.md'), 'utf8');
    const helmPart = doc.slice(doc.indexOf('## With Helm'), doc.indexOf('## With kustomize'));
    const example = /```yaml\n([\s\S]*?)```/.exec(helmPart)?.[1] ?? '';
    const objs = await render(4, { files: [], values: parse(example) as Obj });
    const pod = workloadOf(objs).spec.template.spec as Obj;
    const secretName = (pod.volumes as Obj[]).find((v) => v.name === 'secrets')?.secret.secretName as string;
    const config = parse(find(objs, 'ConfigMap', 'cmdb-exporter-config')[0]?.data['exporter.yaml']) as Obj;
    expect(helmPart).toContain(`helm install cmdb-exporter deploy/helm/cmdb-exporter -n ${NAMESPACE} -f my-values.yaml`);
    expect(helmPart).toContain(`kubectl -n ${NAMESPACE} create secret generic ${secretName} --from-file=${(config.stacks[0].secretFile as string).split('/').pop()}=`);
    expect(find(objs, 'ServiceMonitor')[0]?.metadata.labels.release).toBe('kube-prometheus-stack');
  });
});

describe('the configuration schema', () => {
  it('takes the complete example configuration of the repository as it is (but the keys the chart sets)', async () => {
    const example = parse(readFileSync(join(ROOT, 'config/exporter.example.yaml'), 'utf8')) as Obj;
    delete example.listenAddress;
    delete example.storagePath;
    const r = await template(4, { values: { config: example, secrets: { existingSecret: 'x' } } });
    expect(r.code, r.stderr).toBe(0);
  });
});
