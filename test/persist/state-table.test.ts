/**
 * Every stateful component of a running stack is accounted for in docs/restarts.md: kept in a part of
 * the stack's state (the first table) or named with why nothing of it is kept (the second). The
 * components are found, not listed by hand: a stack with every endpoint and a saved query runs one
 * poll against the simulator, and its runtime is walked (every object reachable from the stacks'
 * fields) for instances of the exporter's own classes. A component added later shows up here and
 * fails the test until the table says what becomes of it at a restart. The parts of the table are
 * the parts the stack's state is made of and read back from (src/stack-state.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StartTimes } from '../../src/exposition/start-times.js';
import { createLogger } from '../../src/logger.js';
import { createInstruments } from '../../src/metrics/instruments.js';
import { SecretScrubber } from '../../src/secrets.js';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { Stacks } from '../../src/stacks.js';
import { SnapshotStore } from '../../src/store/snapshot-store.js';
import { stackFor } from '../helpers/exporter.js';
import { exampleQueries } from '../helpers/queries.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/** Class names declared under src/ (the simulator aside: it is another program). */
function exporterClasses(dir = join(ROOT, 'src')): Set<string> {
  const out = new Set<string>();
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory() && e.name !== 'simulator') for (const c of exporterClasses(path)) out.add(c);
    else if (e.name.endsWith('.ts')) for (const m of readFileSync(path, 'utf8').matchAll(/^(?:export )?(?:abstract )?class (\w+)/gm)) out.add(m[1] as string);
  }
  return out;
}

/** Rows of the markdown table that follows `heading` (its first cells and the backticked names in its `column`). */
function tableAfter(doc: string, heading: string, column: number): Array<{ first: string; names: string[] }> {
  const from = doc.indexOf(heading);
  expect(from, `docs/restarts.md has "${heading}"`).toBeGreaterThanOrEqual(0);
  const lines = doc.slice(from).split('\n');
  const start = lines.findIndex((l) => l.startsWith('|'));
  const rows: Array<{ first: string; names: string[] }> = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    const cells = line.split('|').slice(1, -1).map((c) => c.trim());
    rows.push({ first: cells[0] ?? '', names: [...(cells[column] ?? '').matchAll(/`(\w+)`/g)].map((m) => m[1] as string) });
  }
  return rows;
}

/** Names of the exporter's classes among the objects reachable from `root`. */
function componentsOf(root: unknown, classes: ReadonlySet<string>): Map<string, string> {
  const found = new Map<string, string>();
  const seen = new Set<unknown>();
  // Bounded: objects are visited once; foreign objects (prom-client, pino, undici) are not entered.
  const visit = (x: unknown, path: string): void => {
    if (x === null || typeof x !== 'object' || seen.has(x)) return;
    seen.add(x);
    const name = (x as object).constructor?.name;
    const plain = Array.isArray(x) || x instanceof Map || x instanceof Set || name === 'Object' || name === undefined;
    if (name !== undefined && classes.has(name)) {
      if (!found.has(name)) found.set(name, path);
    } else if (!plain) return;
    if (x instanceof Map) for (const [k, v] of x) visit(v, `${path}.get(${String(k)})`);
    else if (x instanceof Set || Array.isArray(x)) [...x].forEach((v, i) => visit(v, `${path}[${i}]`));
    else for (const [k, v] of Object.entries(x)) visit(v, `${path}.${k}`);
  };
  visit(root, 'stacks');
  return found;
}

let sim: SimulatorServer;
let stacks: Stacks;

beforeAll(async () => {
  sim = await startSimulator({ size: { connectors: 5, actions: 3 } });
  const scrubber = new SecretScrubber();
  const logger = createLogger({ level: 'silent', format: 'json', scrubber });
  const instruments = createInstruments(new Registry(), { defaultMetrics: false });
  const now = () => Date.now() / 1000;
  const store = new SnapshotStore({ instruments, logger, now });
  stacks = new Stacks({ instruments, store, logger, scrubber, now, starts: new StartTimes(now) });
  stacks.add(stackFor(sim, { name: 'walked', queries: exampleQueries() }));
  await stacks.pollOnce();
});

afterAll(async () => {
  await stacks?.closeAll(0);
  await sim?.close();
});

describe('the state table of docs/restarts.md', () => {
  const doc = readFileSync(join(ROOT, 'docs/restarts.md'), 'utf8');
  const kept = tableAfter(doc, '## What is kept, and why', 1);
  const notKept = tableAfter(doc, 'The other parts of a running stack keep nothing a restart needs', 0);

  it('names every component of a running stack once: kept in a part, or not kept and why', () => {
    const classes = exporterClasses();
    const found = componentsOf(stacks, classes);
    const named = [...kept.flatMap((r) => r.names), ...notKept.flatMap((r) => r.names)];
    expect(found.size).toBeGreaterThan(15);
    const missing = [...found].filter(([name]) => !named.includes(name)).map(([name, path]) => `${name} (at ${path})`);
    expect(missing, 'components of a running stack that docs/restarts.md does not account for').toEqual([]);
    expect(named.filter((n, i) => named.indexOf(n) !== i), 'named twice').toEqual([]);
    expect(named.filter((n) => !classes.has(n)), 'named, but no such class').toEqual([]);
    expect(named.filter((n) => !found.has(n)), 'named, but not part of a running stack').toEqual([]);
  });

  it('its parts are those a stack is written in and read back from', () => {
    const parts = kept.map((r) => r.first.replace(/`/g, '')).filter((p) => p !== 'budget.log');
    const written = Object.keys(stacks.stateParts('walked') ?? {});
    expect([...parts].sort()).toEqual([...written].sort());
    const source = readFileSync(join(ROOT, 'src/stack-state.ts'), 'utf8');
    const read = [...new Set([...source.matchAll(/parts\.(\w+)/g)].map((m) => m[1] as string))];
    expect([...read].sort()).toEqual([...written].sort());
  });
});
