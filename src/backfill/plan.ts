/**
 * What a backfill will ask of each stack, before it asks: requests per endpoint and the time they
 * take at the backfill's pace. Counts that depend on the CMDB's answers (pages of the connector
 * history and of the Action list, the number of Actions) are given per unit, since a plan sends nothing.
 */
import { formatDuration } from '../config/durations.js';
import type { StackConfig } from '../config/types.js';

const DAY = 86_400;

/** The UTC days the range touches, each as its start (unix seconds) and `yyyy-mm-dd`. */
export function dayKeys(from: number, to: number): Array<{ start: number; text: string }> {
  const out: Array<{ start: number; text: string }> = [];
  for (let d = Math.floor(from / DAY) * DAY; d <= to; d += DAY) out.push({ start: d, text: new Date(d * 1000).toISOString().slice(0, 10) });
  return out;
}

export interface PlanLine {
  readonly endpoint: string;
  /** Requests known before sending anything. */
  readonly requests: number;
  /** What the count depends on, when the CMDB's answer decides it (`+1 per page of 2000 rows`). */
  readonly more?: string;
}

export interface StackPlan {
  readonly stack: string;
  readonly ratePerMinute: number;
  readonly lines: readonly PlanLine[];
  /** Requests known in advance, the token request included. */
  readonly knownRequests: number;
  /** Seconds the known requests take at the pace. */
  readonly knownSeconds: number;
  /** Seconds each request that depends on the answers adds. */
  readonly secondsPerMoreRequest: number;
}

export function planStack(stack: StackConfig, from: number, to: number): StackPlan {
  const off = new Set<string>(stack.disabledEndpoints);
  const lines: PlanLine[] = [];
  const add = (endpoint: string, requests: number, more?: string) => {
    if (!off.has(endpoint)) lines.push({ endpoint, requests, ...(more ? { more } : {}) });
  };
  if (stack.auth.kind === 'client') lines.push({ endpoint: 'access_token', requests: 1 });
  add('metrics_data', dayKeys(from, to).length, undefined);
  add('connector', 1, `+1 per further page of ${stack.paging.connectorPageSize} rows (one full scan)`);
  add('data_ingestion', 1);
  add('actions', 1, `+1 per further page of ${stack.paging.actionPageSize} Actions`);
  if (!off.has('actions')) add('action_jobs', 0, '+1 per Action');
  add('asset_change', stack.track.assets.length);
  add('user_change', stack.track.users.length);
  // Said, not asked: the data query answers for the data as it is now only.
  if (stack.queries.length > 0) add('data_query', 0, 'saved queries are left out: the data query endpoint has no "as of" date, so a past count cannot be asked for');
  const rate = stack.backfillRequestsPerMinute;
  const knownRequests = lines.reduce((n, l) => n + l.requests, 0);
  return { stack: stack.name, ratePerMinute: rate, lines, knownRequests, knownSeconds: secondsAtPace(knownRequests, rate), secondsPerMoreRequest: 60 / rate };
}

/**
 * Seconds `requests` take at `ratePerMinute`, after the token bucket's burst (src/cmdb/budget.ts:
 * ten seconds' worth, at most 10) goes out at once.
 */
export function secondsAtPace(requests: number, ratePerMinute: number): number {
  const burst = Math.max(1, Math.min(10, Math.ceil(ratePerMinute / 6)));
  return (Math.max(0, requests - burst) * 60) / ratePerMinute;
}

/** The plan as the dry run prints it. */
export function formatPlan(plan: StackPlan, range: { from: number; to: number }): string {
  const iso = (s: number) => new Date(s * 1000).toISOString();
  const out = [`stack ${plan.stack}: ${iso(range.from)} to ${iso(range.to)}, paced at ${plan.ratePerMinute} requests a minute (backfillRequestsPerMinute)`];
  const width = Math.max(...plan.lines.map((l) => l.endpoint.length));
  for (const l of plan.lines) out.push(`  ${l.endpoint.padEnd(width)}  ${String(l.requests).padStart(6)}${l.more ? `  ${l.more}` : ''}`);
  out.push(
    `  ${'total'.padEnd(width)}  ${String(plan.knownRequests).padStart(6)}  known in advance: ${formatDuration(Math.ceil(plan.knownSeconds))} at the pace, plus ${formatDuration(Math.round(plan.secondsPerMoreRequest * 10) / 10)} per request the answers add`,
  );
  return out.join('\n');
}
