/**
 * What the deploy tests share: rendering the kustomizations with `kubectl kustomize`, the
 * kubernetes-models schema of a rendered object, and finding objects in a rendering.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { part } from '../../scripts/parts/index.js';

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- rendered YAML, checked field by field

/** The objects of a multi-document YAML text (empty documents left out). */
export function parseObjects(text: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null && typeof o === 'object');
}

export async function kustomize(dir: string): Promise<Obj[]> {
  try {
    const { stdout } = await run(part('kubectl'), ['kustomize', join(ROOT, dir)], { timeout: 60_000, maxBuffer: 32 << 20 });
    return parseObjects(stdout);
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stderr?: string };
    throw new Error(`kubectl kustomize ${dir} failed: ${e.stderr ?? e.message}`);
  }
}

/** The kubernetes-models class for an object's apiVersion and kind. */
export async function modelFor(apiVersion: string, kind: string): Promise<new (o: Obj) => { validate(): void }> {
  const group = apiVersion.includes('/') ? apiVersion : `core/${apiVersion}`;
  const spec = group.startsWith('monitoring.coreos.com/')
    ? `@kubernetes-models/prometheus-operator/${group}`
    : `kubernetes-models/${group.replace(/^core\//, '')}`;
  const mod = (await import(spec)) as Record<string, new (o: Obj) => { validate(): void }>;
  const model = mod[kind];
  if (!model) throw new Error(`no schema for ${apiVersion} ${kind} in ${spec}`);
  return model;
}

/** Validates every object against its schema; throws naming the first that fails. */
export async function validateAll(objs: readonly Obj[]): Promise<void> {
  for (const o of objs) {
    const Model = await modelFor(String(o.apiVersion), String(o.kind));
    try {
      new Model(o).validate();
    } catch (err) {
      throw new Error(`${o.kind}/${o.metadata?.name}: ${(err as Error).message}`);
    }
  }
}

export const find = (objs: readonly Obj[], kind: string, name?: string) => objs.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));

export const workloadOf = (objs: readonly Obj[]): Obj => {
  const w = [...find(objs, 'Deployment'), ...find(objs, 'StatefulSet')];
  expect(w, 'exactly one workload (Deployment or StatefulSet)').toHaveLength(1);
  return w[0] as Obj;
};
