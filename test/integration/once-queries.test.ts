/**
 * `--once` is the smoke test of a deployment (issue 37): a saved query that was refused (its field
 * is not in the stack's field metadata) or failed fails it (exit 1) and the summary line, the last
 * line of stderr, names it; `--check-config` refuses `== "today"` and `== "2026-11-01 00:00:00"`
 * naming the query and the range to write. The whole process (src/main.ts) against the real simulator.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { startSimulator, type SimulatorServer } from '../../src/simulator/server.js';
import { runDaemon } from '../helpers/daemon.js';

const SECRET = 'once-queries-secret-Qm41';
const GOOD = { name: 'edr-missing', table: 'asset', query: [[{ searchFieldName: 'EP_Not_Installed', operator: '==', value: 'true' }]] };
const SERVERS = { name: 'servers', table: 'asset', query: [[{ searchFieldName: 'Asset_Type', operator: '==', value: 'Server' }]] };
const MISSPELT = { name: 'misspelt-field', table: 'asset', query: [[{ searchFieldName: 'EP_Not_Instaled', operator: '==', value: 'True' }]] };

let sim: SimulatorServer;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 11, secret: SECRET });
  sim.scenario.finishIngestion('success');
  dir = mkdtempSync(join(tmpdir(), 'cmdb-once-queries-'));
});

afterEach(() => sim.clearFaults());

afterAll(async () => {
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function configWith(name: string, queries: unknown[]): string {
  const state = sim.state();
  const file = join(dir, `${name}.yaml`);
  const stack = { name: 'prod', baseUrl: sim.url, clientId: sim.clientId, secret: SECRET, track: { assets: state.trackedAssets, users: state.trackedUsers }, queries };
  writeFileSync(file, stringify({ defaults: { rateLimitPerMinute: 6000, actionJobsPerMinute: 6000, retries: { max: 0 } }, stacks: [stack] }));
  return file;
}

const lastLine = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';

describe('--once with saved queries', () => {
  it('every query counted: exit 0, the summary says so; a Binary "true" counts the records with the field true', async () => {
    const d = runDaemon(['--config', configWith('good', [GOOD, SERVERS]), '--once'], {});
    expect(await d.exited).toBe(0);
    expect(lastLine(d.stderr())).toMatch(/^--once: (\d+) of \1 endpoints ok, 0 failed, 2 of 2 saved queries counted, 1 stack, in \d+\.\ds$/);
    // The simulator compares Binary text exactly, as the service does: "true" sent as written would count 0.
    const expected = sim.dataset.records.asset.records().filter((r) => r.EP_Not_Installed === true).length;
    expect(expected).toBeGreaterThan(0);
    expect(d.stdout()).toContain(`cmdb_query_records{stack="prod",query="edr-missing"} ${expected}\n`);
  });

  it('one good query and one whose field the metadata lacks: exit 1, the summary names the refused query', async () => {
    const d = runDaemon(['--config', configWith('refused', [GOOD, MISSPELT]), '--once'], {});
    expect(await d.exited).toBe(1);
    expect(lastLine(d.stderr())).toMatch(/^--once: (\d+) of \1 endpoints ok, 0 failed, 1 of 2 saved queries counted \(refused: prod\/misspelt-field\), 1 stack, in \d+\.\ds$/);
    expect(d.stderr()).toContain('saved query refused, not sent');
    expect(d.stdout()).toContain('cmdb_query_refused{stack="prod",query="misspelt-field"} 1');
  });

  it('a query whose count failed: exit 1, the summary names it', async () => {
    // The first count answers 503 (no retries configured); the second is answered.
    sim.addFault({ endpoint: 'data_query', status: 503, times: 1 });
    const d = runDaemon(['--config', configWith('failed', [GOOD, SERVERS]), '--once'], {});
    expect(await d.exited).toBe(1);
    expect(lastLine(d.stderr())).toMatch(/^--once: \d+ of \d+ endpoints ok, 1 failed \(prod\/data_query: 503\), 1 of 2 saved queries counted \(failed: prod\/edr-missing\), 1 stack, in \d+\.\ds$/);
  });

  it('--check-config refuses == "today", naming the query and the range to write', async () => {
    const today = { name: 'seen-today', table: 'asset', query: [[{ searchFieldName: 'Last_Discovered_Datetime', operator: '==', value: 'today' }]] };
    const d = runDaemon(['--config', configWith('today', [GOOD, today]), '--check-config'], {});
    expect(await d.exited).toBe(2);
    expect(d.output()).toMatch(/stacks\[0\]\.queries\[1\]\.query\[0\]\[0\]\.value: query "seen-today": "today" with "==" is refused.*\[\[\{operator ">=", value "today"\}\], \[\{operator "<", value "\+1d"\}\]\]/);
  });

  it('--check-config refuses == "2026-11-01 00:00:00" (one second: it counted 0 with last_run_success 1), naming the query and the day to write', async () => {
    const nov1 = { name: 'seen-nov-1', table: 'asset', query: [[{ searchFieldName: 'Last_Discovered_Datetime', operator: '==', type: 'Datetime', value: '2026-11-01 00:00:00' }]] };
    const d = runDaemon(['--config', configWith('nov-1', [GOOD, nov1]), '--check-config'], {});
    expect(await d.exited).toBe(2);
    expect(d.output()).toMatch(/stacks\[0\]\.queries\[1\]\.query\[0\]\[0\]\.value: query "seen-nov-1": "2026-11-01 00:00:00" with "==" is refused.*\[\[\{operator ">=", value "2026-11-01 00:00:00"\}\], \[\{operator "<", value "2026-11-02 00:00:00"\}\]\]/);
  });
});
