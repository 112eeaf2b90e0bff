/**
 * The chart's pods against the kustomize bases and against the exporter itself:
 *
 * - for the same settings, the chart and deploy/kubernetes render the same workload (image, args,
 *   environment, probes, ports, resources, security contexts, volumes and mounts, claims), so the
 *   two ways to install never drift apart;
 * - the exporter runs `--check-config` with the pod's own arguments and environment on what the
 *   chart renders (the ConfigMap, the Secret it creates, the web config), every mount of the pod
 *   replaced by a temporary folder: so keys, paths, the moved inline secrets, the shard count and
 *   the web config are what the exporter accepts.
 */
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { makeCa, makeCert } from '../helpers/certs.js';
import { runDaemon } from '../helpers/daemon.js';
import { cleanHelmHome, render } from './helm.js';
import { find, kustomize, workloadOf, type Obj } from './manifests.js';

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'cmdb-helm-pod-'));
});
afterAll(() => {
  cleanHelmHome();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A pod spec with what legitimately differs taken out: the ConfigMap's name (kustomize adds a hash). */
function comparable(pod: Obj): Obj {
  const copy = structuredClone(pod);
  for (const v of copy.volumes as Obj[]) if (v.configMap) v.configMap.name = '<the configuration>';
  for (const c of copy.containers as Obj[]) {
    // The chart states the pull policy Kubernetes gives a tagged image anyway (IfNotPresent).
    expect(c.imagePullPolicy ?? 'IfNotPresent').toBe('IfNotPresent');
    delete c.imagePullPolicy;
  }
  return copy;
}

/** The kustomize base's image name and Secret, which the chart has no default for. */
const BASE = { image: { repository: 'cmdb-exporter' }, secrets: { existingSecret: 'cmdb-exporter' } };

describe('the chart and the kustomize bases render the same workload for the same settings', () => {
  it('the base: one Deployment, Recreate, the state on a claim', async () => {
    const base = workloadOf(await kustomize('deploy/kubernetes'));
    const chart = workloadOf(await render(4, { values: { ...BASE, persistence: { enabled: true } } }));
    expect(chart.kind).toBe(base.kind);
    expect(chart.spec.replicas).toBe(base.spec.replicas);
    expect(chart.spec.strategy).toEqual(base.spec.strategy);
    expect(comparable(chart.spec.template.spec)).toEqual(comparable(base.spec.template.spec));
  });

  it('the sharded overlay: a StatefulSet of 3, the shard count from replicas, a claim per pod', async () => {
    const overlay = workloadOf(await kustomize('deploy/kubernetes/overlays/sharded'));
    const chart = workloadOf(await render(4, { values: { ...BASE, sharding: { enabled: true }, replicas: 3, persistence: { enabled: true } } }));
    expect(chart.kind).toBe('StatefulSet');
    for (const key of ['replicas', 'podManagementPolicy']) expect(chart.spec[key], key).toEqual(overlay.spec[key]);
    expect(comparable(chart.spec.template.spec)).toEqual(comparable(overlay.spec.template.spec));
    const claims = (w: Obj) => (w.spec.volumeClaimTemplates as Obj[]).map((t) => ({ name: t.metadata.name, spec: t.spec }));
    expect(claims(chart)).toEqual(claims(overlay));
  });

  it('the per-stack overlay: the same arguments (the Service\'s URL for /sd) and the same ScrapeConfig discovery', async () => {
    const overlay = await kustomize('deploy/kubernetes/overlays/per-stack');
    const chart = await render(4, { values: { ...BASE, scrape: { via: 'ScrapeConfig', perStack: true }, persistence: { enabled: true } } });
    expect(comparable(workloadOf(chart).spec.template.spec)).toEqual(comparable(workloadOf(overlay).spec.template.spec));
    const [mine] = find(chart, 'ScrapeConfig');
    const [theirs] = find(overlay, 'ScrapeConfig');
    expect(mine?.spec.honorLabels).toBe(theirs?.spec.honorLabels);
    expect((mine?.spec.httpSDConfigs as Obj[]).map((h) => [h.url, h.refreshInterval])).toEqual((theirs?.spec.httpSDConfigs as Obj[]).map((h) => [h.url, h.refreshInterval]));
    const relabelings = mine?.spec.relabelings as Obj[];
    expect(relabelings[0]).toEqual(theirs?.spec.relabelings[0]);
    expect(relabelings.at(-1)).toEqual(theirs?.spec.relabelings.at(-1));
  });
});

const decode = (data: Record<string, string> = {}) => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

/**
 * Runs `--check-config` as the chart's pod would: every mount of the container is a folder under
 * `dir`, filled from the ConfigMap or Secret the chart renders (a Secret it does not render gets a
 * placeholder file per key the configuration reads, or `tls` a certificate made here), and every
 * path in the arguments and the files is moved there.
 */
async function checkAsThePod(objs: Obj[], dir: string): Promise<string> {
  const w = workloadOf(objs);
  const pod = w.spec.template.spec as Obj;
  const [c] = pod.containers as Obj[];
  const mounts = ((c?.volumeMounts ?? []) as Obj[]).filter((m) => m.mountPath !== '/tmp').sort((a, b) => b.mountPath.length - a.mountPath.length);
  const local = (text: string) => mounts.reduce((t, m) => t.replaceAll(`${m.mountPath}/`, `${join(dir, m.name)}/`).replaceAll(m.mountPath, join(dir, m.name)), text);
  const config = parse(find(objs, 'ConfigMap', `${w.metadata.name}-config`)[0]?.data['exporter.yaml'] ?? '') as { stacks: Array<Record<string, string>> };
  for (const m of mounts) {
    const folder = join(dir, m.name);
    mkdirSync(folder, { recursive: true });
    const volume = (pod.volumes as Obj[]).find((v) => v.name === m.name);
    let files: Record<string, string> = {};
    if (volume?.configMap) files = find(objs, 'ConfigMap', volume.configMap.name)[0]?.data;
    else if (volume?.secret) {
      const secret = find(objs, 'Secret', volume.secret.secretName)[0];
      if (secret) files = { ...decode(secret.data), ...(secret.stringData ?? {}) };
      else if (m.name === 'tls') {
        makeCa(folder);
        makeCert(folder, 'server');
        copyFileSync(join(folder, 'server.crt'), join(folder, 'tls.crt'));
        copyFileSync(join(folder, 'server.key'), join(folder, 'tls.key'));
      } else {
        // A Secret of the user's: a file for each key the stacks read from its mount.
        for (const s of config.stacks) for (const f of [s.secretFile, s.tokenFile]) if (f?.startsWith(`${m.mountPath}/`)) files[posix.basename(f)] = 'k8s-test-secret';
      }
    }
    for (const [name, text] of Object.entries(files ?? {})) writeFileSync(join(folder, name), local(text));
  }
  const env: Record<string, string> = {};
  for (const e of (c?.env ?? []) as Obj[]) {
    env[e.name] = e.value ?? (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name' ? `${w.metadata.name}-${w.spec.replicas - 1}` : 'k8s-test-secret');
  }
  // Kubernetes expands $(VAR) in the arguments from the container's environment.
  const args = (c?.args as string[]).map((a) => local(a).replace(/\$\(([A-Z_]+)\)/g, (_, name: string) => env[name] ?? ''));
  const d = runDaemon([...args, '--check-config'], env);
  expect(await d.exited, d.output()).toBe(0);
  return d.output();
}

describe('the exporter accepts what the chart wires into its pod (--check-config)', () => {
  it('the created Secret, the inline secret moved into it and a ${VAR} from extraEnv; the sharded last pod its shard; TLS and basic auth', async () => {
    const [created, sharded, tls] = await Promise.all([
      render(4, { files: ['created-secret-values.yaml'] }),
      render(4, { files: ['sharded-values.yaml'] }),
      render(4, { files: ['tls-values.yaml'] }),
    ]);
    const outputs = await Promise.all([checkAsThePod(created, join(tmp, 'created')), checkAsThePod(sharded, join(tmp, 'sharded')), checkAsThePod(tls, join(tmp, 'tls'))]);
    expect(outputs[0]).toContain('configuration OK: 3 stack(s)');
    expect(outputs[1]).toContain('shard 2 of 3 (from pod name)');
    expect(outputs[2]).toContain('web config OK: TLS, 1 basic auth user(s)');
  });
});
