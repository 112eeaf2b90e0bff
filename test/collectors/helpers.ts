/**
 * Shared test plumbing for the collector specs: fixture bodies go through the real schemas, every
 * sample of every test is checked against the catalogue, for finiteness and for planted secrets.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { z } from 'zod';
import { validate } from '../../src/api/schemas.js';
import { FAMILIES } from '../../src/metrics/catalogue.js';
import type { Labels, Sample } from '../../src/metrics/sample.js';
import { PLANTED_SECRETS } from '../../src/simulator/api.js';
import { StateMemory } from '../../src/collectors/state-memory.js';
import type { CollectorContext } from '../../src/collectors/types.js';

export const NOW = 1_714_700_000; // 2024-05-03T01:33:20Z, a fixed clock

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

export function fixtureText(path: string): string {
  return readFileSync(`${FIXTURES}${path}`, 'utf8');
}

export function fixture(path: string): unknown {
  return JSON.parse(fixtureText(path));
}

/** The body through the real schema; the test fails if the schema rejects it. */
export function validated<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = validate(schema, body);
  if (!result.ok) throw new Error(`fixture rejected by schema at ${result.field}: ${result.message}`);
  return result.value;
}

export interface DebugCall {
  message: string;
  fields: Record<string, unknown> | undefined;
}

export interface TestContext extends CollectorContext {
  readonly debugCalls: DebugCall[];
}

export function context(opts: { timeZone?: string; states?: StateMemory } = {}): TestContext {
  const debugCalls: DebugCall[] = [];
  return {
    now: NOW,
    timeZone: opts.timeZone ?? 'UTC',
    states: opts.states ?? new StateMemory(),
    debug: (message, fields) => debugCalls.push({ message, fields }),
    debugCalls,
  };
}

/**
 * The checks every collector output must pass: the name is a catalogue family of CMDB data, the
 * label names are the family's minus `stack` in the same order, the value is finite, and no label
 * value or debug line holds a planted secret.
 */
export function expectWellFormed(samples: readonly Sample[], ctx?: TestContext): void {
  const problems: string[] = [];
  for (const s of samples) {
    const what = `${s.name}${JSON.stringify(s.labels)}`;
    const family = FAMILIES.get(s.name);
    if (!family || family.origin !== 'snapshot' || family.endpoint === undefined) problems.push(`${what}: not a CMDB-data family`);
    const expected = JSON.stringify(family?.labels.filter((l) => l !== 'stack'));
    if (JSON.stringify(Object.keys(s.labels)) !== expected) problems.push(`${what}: label names are not ${expected}`);
    if (Object.values(s.labels).some((v) => typeof v !== 'string')) problems.push(`${what}: a label value is not text`);
    if (!Number.isFinite(s.value)) problems.push(`${what}: value ${s.value} is not finite`);
  }
  const text = JSON.stringify(samples) + JSON.stringify(ctx?.debugCalls ?? []);
  for (const secret of PLANTED_SECRETS) if (text.includes(secret)) problems.push(`planted secret ${secret} leaked`);
  expect(problems).toEqual([]);
}

/** Run a collector and apply expectWellFormed to what it returns. */
export function collect<I>(collector: (input: I, ctx: CollectorContext) => Sample[], input: I, ctx: TestContext): Sample[] {
  const samples = collector(input, ctx);
  expectWellFormed(samples, ctx);
  return samples;
}

function matches(s: Sample, name: string, labels: Labels): boolean {
  return s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);
}

/** Samples of `name` whose labels include `labels`. */
export function find(samples: readonly Sample[], name: string, labels: Labels = {}): Sample[] {
  return samples.filter((s) => matches(s, name, labels));
}

/** The value of the one sample of `name` with `labels`; undefined when there is none, an error when several. */
export function valueOf(samples: readonly Sample[], name: string, labels: Labels = {}): number | undefined {
  const found = find(samples, name, labels);
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/** A state set as { state: value } for one entity. */
export function stateSet(samples: readonly Sample[], name: string, key: Labels, stateLabel: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const s of find(samples, name, key)) out[s.labels[stateLabel] ?? '?'] = s.value;
  return out;
}

/** Seconds of an ISO time written in a test, for readable expectations. */
export function iso(text: string): number {
  return Date.parse(text) / 1000;
}
