/**
 * The backfill cell: `cmdb-exporter backfill` over 30 days of the medium size's history (the
 * simulator's connectors running once a day, 30 runs each; Action jobs and ingestion runs spread
 * over the 30 days), run as users run it, in a process of its own, with the real promtool.
 *
 * Reported: requests per endpoint (from the simulator's request log) and the time they take at
 * the default pace (backfillRequestsPerMinute, computed as the token bucket spends it: the cell
 * itself reads at a raised pace, since waiting 20 minutes measures nothing), the time and peak RSS
 * of producing the OpenMetrics text, its size, and promtool's time and the blocks' size.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { secondsAtPace } from '../src/backfill/plan.js';
import { BUILTIN_SETTINGS } from '../src/config/rules.js';
import { startChild } from './children.js';
import { bytes, count, seconds, type Table } from './format.js';
import { sizeByName } from './sizes.js';
import type { SimulatorReady } from './simulator-process.js';

/** The simulator process's fixed clock (bench/simulator-process.ts): the range ends 3 h before it. */
const SIMULATOR_NOW = Date.parse('2026-11-21T12:00:00Z') / 1000;
export const BACKFILL_DAYS = 30;

export interface BackfillFigures {
  readonly size: string;
  readonly days: number;
  readonly connectorProfiles: number;
  readonly connectorRuns: number;
  readonly actions: number;
  readonly trackedNames: number;
  readonly requests: number;
  readonly requestsByEndpoint: Record<string, number>;
  /** backfillRequestsPerMinute's default. */
  readonly defaultRate: number;
  /** Seconds the requests take at the default pace. */
  readonly secondsAtDefaultPace: number;
  readonly samples: number;
  readonly openMetricsBytes: number;
  readonly files: number;
  readonly generateSeconds: number;
  readonly peakRssBytes: number;
  readonly promtoolSeconds: number;
  readonly blocks: number;
  readonly blockBytes: number;
  readonly wallSeconds: number;
  /** `--step` of the run, or undefined for the default steps. */
  readonly step?: string;
}

function du(path: string): number {
  const s = statSync(path);
  if (!s.isDirectory()) return s.size;
  return readdirSync(path).reduce((n, name) => n + du(join(path, name)), 0);
}

function run(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const main = fileURLToPath(new URL('../src/main.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => {
      const text = c.toString('utf8');
      stderr += text;
      if (stderr.length > 1_000_000) stderr = stderr.slice(-100_000);
      process.stderr.write(text);
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

function figure(text: string, pattern: RegExp, what: string): RegExpExecArray {
  const m = pattern.exec(text);
  if (!m) throw new Error(`backfill output has no ${what}:\n${text}`);
  return m;
}

export async function benchBackfill(opts: { days?: number; step?: string }, progress: (m: string) => void): Promise<BackfillFigures> {
  const days = opts.days ?? BACKFILL_DAYS;
  const medium = sizeByName('medium');
  if (!medium) throw new Error('no medium size');
  const knobs = { ...medium.knobs, runsPerConnector: days, jobsPerAction: days };
  progress(`backfill: simulator with ${days} days of medium history`);
  const sim = await startChild('simulator-process.js', [JSON.stringify(knobs), JSON.stringify({ connectorPeriodSeconds: 86_400, historyDays: days })]);
  const dir = mkdtempSync(join(tmpdir(), 'cmdb-bench-backfill-'));
  try {
    const ready = sim.ready as SimulatorReady;
    const config = join(dir, 'exporter.yaml');
    writeFileSync(
      config,
      stringify({
        stacks: [
          {
            name: 'bench',
            baseUrl: ready.url,
            clientId: ready.clientId,
            secret: ready.secret,
            // Raised for the cell; the time at the default pace is computed from the requests.
            rateLimitPerMinute: 6000,
            backfillRequestsPerMinute: 6000,
            track: { assets: ready.trackedAssets, users: ready.trackedUsers },
          },
        ],
      }),
    );
    const to = SIMULATOR_NOW - 3 * 3600;
    const iso = (s: number) => new Date(s * 1000).toISOString();
    const out = join(dir, 'blocks');
    await fetch(`${ready.url}/_admin/requests/reset`, { method: 'POST' }).catch(() => undefined);
    progress(`backfill: ${days} days, ${ready.connectorProfiles} connector profiles, ${ready.actions} Actions${opts.step ? `, --step ${opts.step}` : ''}`);
    const t0 = performance.now();
    const args = ['backfill', '--config', config, '--from', iso(to - days * 86_400), '--to', iso(to), '--out', out, ...(opts.step ? ['--step', opts.step] : [])];
    const result = await run(args);
    const wallSeconds = (performance.now() - t0) / 1000;
    if (result.code !== 0) throw new Error(`backfill exited ${String(result.code)}:\n${result.stdout}\n${result.stderr.slice(-4000)}`);
    const requestsByEndpoint = await simulatorRequests(ready.url);
    const requests = Object.values(requestsByEndpoint).reduce((a, b) => a + b, 0);
    const om = figure(result.stdout, /openmetrics: (\d+) samples, (\d+) bytes in (\d+) file\(s\), ([\d.]+)s, peak RSS (\d+) MB/, 'openmetrics line');
    const pt = figure(result.stdout, /promtool: \d+ run\(s\) in ([\d.]+)s/, 'promtool line');
    const blocks = readdirSync(out).filter((n) => /^[0-9A-Z]{26}$/.test(n));
    const rate = BUILTIN_SETTINGS.backfillRequestsPerMinute;
    return {
      size: medium.name,
      days,
      connectorProfiles: ready.connectorProfiles,
      connectorRuns: ready.connectorRuns,
      actions: ready.actions,
      trackedNames: ready.trackedAssets.length + ready.trackedUsers.length,
      requests,
      requestsByEndpoint,
      defaultRate: rate,
      secondsAtDefaultPace: secondsAtPace(requests, rate),
      samples: Number(om[1]),
      openMetricsBytes: Number(om[2]),
      files: Number(om[3]),
      generateSeconds: Number(om[4]),
      peakRssBytes: Number(om[5]) * 2 ** 20,
      promtoolSeconds: Number(pt[1]),
      blocks: blocks.length,
      blockBytes: du(out),
      wallSeconds,
      ...(opts.step ? { step: opts.step } : {}),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await sim.stop();
  }
}

/** Requests per endpoint from the simulator's request log. */
async function simulatorRequests(url: string): Promise<Record<string, number>> {
  const r = await fetch(`${url}/_admin/requests`);
  const body = (await r.json()) as { requests?: Array<{ endpoint?: string }> } | Array<{ endpoint?: string }>;
  const list = Array.isArray(body) ? body : (body.requests ?? []);
  const out: Record<string, number> = {};
  for (const req of list) out[req.endpoint ?? 'other'] = (out[req.endpoint ?? 'other'] ?? 0) + 1;
  return out;
}

/** Where the backfill section sits in docs/performance.md: `--only backfill --write` replaces it there. */
export const BACKFILL_START = '<!-- backfill:start -->';
export const BACKFILL_END = '<!-- backfill:end -->';

/** The section of docs/performance.md, between its markers. */
export function backfillSection(f: BackfillFigures, markdownTable: (t: Table) => string): string {
  const t = backfillTable(f);
  return [
    BACKFILL_START,
    '## Backfill\n',
    `\`cmdb-exporter backfill\` (docs/backfill.md) over ${f.days} days of the ${f.size} size's history: the simulator's connectors run once a day with ${f.days} runs each, Action jobs and ingestion runs spread over the ${f.days} days. The command runs as users run it, in a process of its own, with the real promtool; it reads at a raised pace (waiting for the default pace measures nothing), and the time at the default pace is what the token bucket makes of the requests. Run alone with \`npm run bench -- --only backfill --write\`.\n`,
    `${t.title}:\n`,
    markdownTable(t),
    '',
    `Producing the text is the replay (each unit's collector run again only around its changes, its lines repeated otherwise) and writing it; promtool then reads each 18-hour file once. Both grow with the samples: series × steps (the default step is each group's interval, at most 5 minutes).`,
    BACKFILL_END,
    '',
  ].join('\n');
}

export function backfillTable(f: BackfillFigures): Table {
  const byEndpoint = Object.entries(f.requestsByEndpoint)
    .sort((a, b) => b[1] - a[1])
    .map(([e, n]) => `${e} ${count(n)}`)
    .join(', ');
  return {
    title: `Backfill of ${f.days} days, ${f.size} size (${count(f.connectorProfiles)} connector profiles with a run a day, ${count(f.actions)} Actions, ${count(f.trackedNames)} tracked names), ${f.step ? `--step ${f.step}` : 'default steps'}`,
    head: ['what', 'figure'],
    numericFrom: 1,
    rows: [
      ['requests', `${count(f.requests)} (${byEndpoint})`],
      [`time at the default pace (${f.defaultRate} a minute)`, seconds(f.secondsAtDefaultPace)],
      ['OpenMetrics text', `${count(f.samples)} samples, ${bytes(f.openMetricsBytes)} in ${f.files} files of 18 h`],
      ['producing it (replay and writing)', seconds(f.generateSeconds)],
      ['peak RSS of the backfill process', bytes(f.peakRssBytes)],
      ['promtool (all files)', seconds(f.promtoolSeconds)],
      ['blocks written', `${f.blocks}, ${bytes(f.blockBytes)}`],
      ['whole command, wall time', seconds(f.wallSeconds)],
    ],
  };
}
