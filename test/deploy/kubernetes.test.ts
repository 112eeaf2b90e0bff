/**
 * deploy/kubernetes: every kustomization rendered with `kubectl kustomize`, every object validated
 * against the Kubernetes and prometheus-operator schemas (kubernetes-models), and the pods checked
 * against what the exporter really accepts: the rendered ConfigMap passes `--check-config` with the
 * Secret's mount replaced by temporary files, and probes, ports and paths agree with it.
 *
 * There is no cluster here: nothing is applied. What these checks do not cover is listed in
 * docs/kubernetes.md ("What was validated").
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runDaemon } from '../helpers/daemon.js';
import { DEFAULT_PORT } from '../../src/config/types.js';
import { find, kustomize, modelFor, ROOT, workloadOf, type Obj } from './manifests.js';

const PER_STACK = 'deploy/kubernetes/overlays/per-stack';
const KUSTOMIZATIONS = ['deploy/kubernetes', 'deploy/kubernetes/base', 'deploy/kubernetes/overlays/sharded', PER_STACK] as const;
/** What scrapes the exporter: a ServiceMonitor, or in the per-stack overlay a ScrapeConfig of /sd. */
const scraperOf = (dir: string) => (dir === PER_STACK ? 'ScrapeConfig/cmdb-exporter' : 'ServiceMonitor/cmdb-exporter');

const rendered = new Map<string, Obj[]>();
let tmp: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), 'cmdb-k8s-'));
  for (const dir of KUSTOMIZATIONS) rendered.set(dir, await kustomize(dir));
}, 120_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe.each(KUSTOMIZATIONS)('kubectl kustomize %s', (dir) => {
  const objs = () => rendered.get(dir) ?? [];

  it('renders the expected objects, each valid against its schema', async () => {
    const kinds = objs().map((o) => `${o.kind}/${o.metadata?.name}`).sort();
    expect(kinds).toEqual(expect.arrayContaining(['PrometheusRule/cmdb-exporter', 'Service/cmdb-exporter', scraperOf(dir)]));
    // One scraper only: both would store every series twice.
    expect(kinds.filter((k) => k.startsWith('ServiceMonitor/') || k.startsWith('ScrapeConfig/'))).toEqual([scraperOf(dir)]);
    expect(find(objs(), 'ConfigMap').filter((c) => c.metadata.labels?.grafana_dashboard === '1')).toHaveLength(3);
    for (const o of objs()) {
      const Model = await modelFor(String(o.apiVersion), String(o.kind));
      expect(() => new Model(o).validate(), `${o.kind}/${o.metadata?.name}`).not.toThrow();
    }
  });

  it('runs the exporter hardened: non-root, read-only root filesystem, no capabilities, resources set', () => {
    const pod = workloadOf(objs()).spec.template.spec as Obj;
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(pod.automountServiceAccountToken).toBe(false);
    const [c] = pod.containers as Obj[];
    expect(c?.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(c?.resources.requests.cpu).toBeDefined();
    expect(c?.resources.requests.memory).toBeDefined();
    expect(c?.resources.limits.memory).toBeDefined();
  });

  it('keeps the state on a persistent volume mounted writable at --storage.path: a claim of its own for each replica', () => {
    const w = workloadOf(objs());
    const pod = w.spec.template.spec as Obj;
    const [c] = pod.containers as Obj[];
    const args = c?.args as string[];
    const path = args[args.indexOf('--storage.path') + 1];
    expect(path).toBe('/var/lib/cmdb-exporter');
    const mount = (c?.volumeMounts as Obj[]).find((m) => m.mountPath === path);
    expect(mount?.readOnly).toBeUndefined();
    const templates = (w.spec.volumeClaimTemplates ?? []) as Obj[];
    const volume = (pod.volumes as Obj[]).find((v) => v.name === mount?.name);
    if (w.kind === 'StatefulSet') {
      // Each pod gets the template's claim: no volume of that name in the pod, no shared claim.
      expect(volume).toBeUndefined();
      expect(templates.map((t) => t.metadata.name)).toEqual([mount?.name]);
      expect(templates[0]?.spec.accessModes).toEqual(['ReadWriteOnce']);
      expect(find(objs(), 'PersistentVolumeClaim')).toEqual([]);
    } else {
      expect(w.spec.replicas).toBe(1);
      expect(w.spec.strategy.type).toBe('Recreate');
      const [claim] = find(objs(), 'PersistentVolumeClaim', volume?.persistentVolumeClaim?.claimName);
      expect(claim?.spec.accessModes).toEqual(['ReadWriteOnce']);
      expect(templates).toEqual([]);
    }
    // The pod's group may write it (the files the exporter writes there are its user's alone).
    expect(pod.securityContext.fsGroup).toBe(pod.securityContext.runAsGroup);
  });

  it('probes, ports, Service and ServiceMonitor agree with the exporter', () => {
    const w = workloadOf(objs());
    const [c] = w.spec.template.spec.containers as Obj[];
    expect(c?.ports).toEqual([{ name: 'http', containerPort: DEFAULT_PORT }]);
    expect(c?.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(c?.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    const [svc] = find(objs(), 'Service', 'cmdb-exporter');
    expect(svc?.spec.ports).toEqual([{ name: 'http', port: DEFAULT_PORT, targetPort: 'http' }]);
    // The Service selects the pods; the ServiceMonitor selects the Service, by its port name.
    for (const [k, v] of Object.entries(svc?.spec.selector as Record<string, string>)) expect(w.spec.template.metadata.labels[k]).toBe(v);
    if (dir === PER_STACK) {
      // /sd hands Prometheus the Service's address (--web.external-url); the ScrapeConfig reads /sd there.
      const svcUrl = `http://${svc?.metadata.name}.${svc?.metadata.namespace}.svc:${DEFAULT_PORT}`;
      expect(c?.args).toContain(`--web.external-url=${svcUrl}`);
      const [sc] = find(objs(), 'ScrapeConfig');
      expect(sc?.spec.httpSDConfigs).toEqual([expect.objectContaining({ url: `${svcUrl}/sd` })]);
      expect(sc?.spec.honorLabels).toBe(true);
      // The rules select job="cmdb-exporter": the ScrapeConfig's last relabeling sets it.
      expect((sc?.spec.relabelings as Obj[]).at(-1)).toEqual({ targetLabel: 'job', replacement: 'cmdb-exporter' });
      return;
    }
    const [sm] = find(objs(), 'ServiceMonitor');
    for (const [k, v] of Object.entries(sm?.spec.selector.matchLabels as Record<string, string>)) expect(svc?.metadata.labels[k]).toBe(v);
    expect(sm?.spec.endpoints).toEqual([expect.objectContaining({ port: 'http', path: '/metrics' })]);
  });

  it('the rendered ConfigMap passes --check-config with the mounted Secret replaced by temporary files', async () => {
    const w = workloadOf(objs());
    const pod = w.spec.template.spec as Obj;
    const [c] = pod.containers as Obj[];
    const args = c?.args as string[];
    const configPath = args[args.indexOf('--config') + 1] ?? '';
    const mounts = c?.volumeMounts as Obj[];
    const mountOf = (path: string) => mounts.find((m) => path.startsWith(`${m.mountPath}/`));
    // --config names a key of the ConfigMap that kustomize wired into the pod.
    const configMount = mountOf(configPath);
    const configVolume = (pod.volumes as Obj[]).find((v) => v.name === configMount?.name);
    const [configMap] = find(objs(), 'ConfigMap', configVolume?.configMap?.name);
    const configText = configMap?.data?.[posix.basename(configPath)] as string | undefined;
    expect(configText, `ConfigMap key for ${configPath}`).toBeDefined();

    // Every secretFile / tokenFile lies in the Secret's mount; give each a temporary file instead.
    const secretMount = mounts.find((m) => (pod.volumes as Obj[]).find((v) => v.name === m.name)?.secret);
    expect(secretMount?.readOnly).toBe(true);
    const config = parse(configText ?? '') as { listenAddress?: string; stacks: Array<Record<string, string>> };
    const secretsDir = join(tmp, dir.replace(/\W/g, '_'));
    mkdirSync(secretsDir, { recursive: true });
    let text = configText ?? '';
    for (const stack of config.stacks) {
      for (const key of ['secretFile', 'tokenFile'] as const) {
        const path = stack[key];
        if (path === undefined) continue;
        expect(posix.dirname(path), `${stack.name}.${key} lies in the Secret's mount`).toBe(secretMount?.mountPath);
        writeFileSync(join(secretsDir, posix.basename(path)), 'k8s-test-secret\n');
        text = text.replace(path, join(secretsDir, posix.basename(path)));
      }
    }
    expect(config.listenAddress).toBe(`:${DEFAULT_PORT}`);
    const file = join(secretsDir, 'exporter.yaml');
    writeFileSync(file, text);

    // The container's own arguments and environment, with only the config path replaced.
    const env: Record<string, string> = {};
    for (const e of (c?.env ?? []) as Obj[]) env[e.name] = e.value ?? (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name' ? `${w.metadata.name}-${(w.spec.replicas ?? 1) - 1}` : '');
    const d = runDaemon([...args.map((a) => (a === configPath ? file : a)), '--check-config'], env);
    expect(await d.exited, d.output()).toBe(0);
    expect(d.output()).toContain(`configuration OK: ${config.stacks.length} stack(s)`);
    if (w.kind === 'StatefulSet') {
      // The shard count the pods are told equals the number of pods.
      expect(Number(env.EXPORTER_TOTAL_SHARDS)).toBe(w.spec.replicas);
      expect(d.output()).toContain(`shard ${w.spec.replicas - 1} of ${w.spec.replicas} (from pod name)`);
    }
  });
});

describe('the per-stack overlay', () => {
  it('is the base but for the ScrapeConfig and --web.external-url', () => {
    const base = rendered.get('deploy/kubernetes') ?? [];
    const perStack = rendered.get(PER_STACK) ?? [];
    const names = (objs: Obj[]) => objs.map((o) => `${o.kind}/${o.metadata.name}`).filter((k) => !k.startsWith('ServiceMonitor/') && !k.startsWith('ScrapeConfig/')).sort();
    expect(names(perStack)).toEqual(names(base));
    const args = (objs: Obj[]) => (workloadOf(objs).spec.template.spec.containers[0].args as string[]).filter((a) => !a.startsWith('--web.external-url='));
    expect(args(perStack)).toEqual(args(base));
  });

  it('its ScrapeConfig keeps exactly the targets /sd describes', () => {
    const [sc] = find(rendered.get(PER_STACK) ?? [], 'ScrapeConfig');
    const shipped = parse(readFileSync(join(ROOT, 'config/prometheus/per-stack.yml'), 'utf8')) as { scrape_configs: Obj[] };
    const job = shipped.scrape_configs[0] as Obj;
    // The same keep rule and honor_labels as the plain Prometheus example.
    const [keep] = sc?.spec.relabelings as Obj[];
    const [plainKeep] = job.relabel_configs as Obj[];
    expect(keep).toEqual({ sourceLabels: plainKeep?.source_labels, regex: plainKeep?.regex, action: plainKeep?.action });
    expect(job.honor_labels).toBe(true);
  });
});

describe('the sharded overlay', () => {
  it('replaces the Deployment with a StatefulSet whose pod matches the base pod but for the shard settings', () => {
    const base = workloadOf(rendered.get('deploy/kubernetes/base') ?? []);
    const sharded = workloadOf(rendered.get('deploy/kubernetes/overlays/sharded') ?? []);
    expect(base.kind).toBe('Deployment');
    expect(base.spec.replicas).toBe(1);
    expect(sharded.kind).toBe('StatefulSet');
    expect(sharded.spec.serviceName).toBe('cmdb-exporter');
    const strip = (pod: Obj) => {
      const copy = JSON.parse(JSON.stringify(pod)) as Obj;
      const [c] = copy.containers as Obj[];
      delete c?.env;
      if (c) c.args = (c.args as string[]).filter((a) => a !== '--shard-from-pod-name');
      // The state volume: the base's one claim, the StatefulSet's claim per replica (volumeClaimTemplates).
      copy.volumes = (copy.volumes as Obj[]).filter((v) => !v.persistentVolumeClaim);
      return copy;
    };
    expect(strip(sharded.spec.template.spec)).toEqual(strip(base.spec.template.spec));
    const [svc] = find(rendered.get('deploy/kubernetes/overlays/sharded') ?? [], 'Service', 'cmdb-exporter');
    expect(svc?.spec.clusterIP).toBe('None');
  });

  it('the top-level kustomization is the base in the monitoring namespace', () => {
    const top = rendered.get('deploy/kubernetes') ?? [];
    for (const o of top) expect(o.metadata.namespace, `${o.kind}/${o.metadata.name}`).toBe('monitoring');
    expect(top.map((o) => o.kind).sort()).toEqual((rendered.get('deploy/kubernetes/base') ?? []).map((o) => o.kind).sort());
  });

  it('docs/kubernetes.md creates the Secret the pods mount, with every key the configuration reads', () => {
    const doc = readFileSync(join(ROOT, 'docs/kubernetes.md'), 'utf8');
    const pod = workloadOf(rendered.get('deploy/kubernetes/base') ?? []).spec.template.spec as Obj;
    const secretName = (pod.volumes as Obj[]).find((v) => v.secret)?.secret.secretName as string;
    const config = parse(readFileSync(join(ROOT, 'deploy/kubernetes/base/exporter.yaml'), 'utf8')) as { stacks: Array<Record<string, string>> };
    expect(doc).toContain(`kubectl -n monitoring create secret generic ${secretName}`);
    for (const s of config.stacks) expect(doc).toContain(`--from-file=${posix.basename(s.secretFile ?? s.tokenFile ?? '')}=`);
  });
});
