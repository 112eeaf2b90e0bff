/**
 * What a backfill will ask of each stack before it asks (docs/backfill.md, "The plan and the
 * budget"): requests per endpoint and their time at the backfill's pace and the service's own speed
 * (a 2,000-row connector page ~47 s, far longer than the pace leaves between requests). Counts that
 * depend on the CMDB's answers (pages, the number of Actions) are given per unit.
 */
import { burstFor } from '../cmdb/budget.js';
import { formatDuration } from '../config/durations.js';
import type { StackConfig } from '../config/types.js';

const DAY = 86_400;

/** The real service's round trip for a small answer (0.4–0.8 s observed). */
export const SERVICE_SECONDS_PER_REQUEST = 0.6;
/** …and what each row of a page adds (about 2.3 s per 100 records observed). */
export const SERVICE_SECONDS_PER_ROW = 0.023;

/** Seconds the real service takes for a page of `rows` rows. */
export function serviceSeconds(rows = 0): number {
  return SERVICE_SECONDS_PER_REQUEST + rows * SERVICE_SECONDS_PER_ROW;
}

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
  readonly serviceSeconds: number;
}

export interface StackPlan {
  readonly stack: string;
  readonly ratePerMinute: number;
  readonly lines: readonly PlanLine[];
  /** Requests known in advance, the token request included. */
  readonly knownRequests: number;
  /** Seconds the known requests take at the pace and the service's speed. */
  readonly knownSeconds: number;
}

/** `days`: the days whose counts are read, when not every day of [from, to] (--fill-gaps). */
export function planStack(stack: StackConfig, from: number, to: number, days?: number): StackPlan {
  const off = new Set<string>(stack.disabledEndpoints);
  const rate = stack.backfillRequestsPerMinute;
  const lines: PlanLine[] = [];
  const add = (endpoint: string, requests: number, service: number, more?: string) => {
    if (off.has(endpoint)) return;
    const moreSeconds = Math.max(60 / rate, service);
    lines.push({ endpoint, requests, serviceSeconds: service, ...(more ? { more: `${more}, ~${formatDuration(Math.round(moreSeconds))} each` } : {}) });
  };
  if (stack.auth.kind === 'client') lines.push({ endpoint: 'access_token', requests: 1, serviceSeconds: serviceSeconds() });
  add('metrics_data', days ?? dayKeys(from, to).length, serviceSeconds());
  const { connectorPageSize, actionPageSize } = stack.paging;
  add('connector', 1, serviceSeconds(connectorPageSize), `+1 per further page of ${connectorPageSize} rows (one full scan)`);
  add('data_ingestion', 1, serviceSeconds());
  add('actions', 1, serviceSeconds(actionPageSize), `+1 per further page of ${actionPageSize} Actions`);
  if (!off.has('actions')) add('action_jobs', 0, serviceSeconds(), '+1 per Action');
  add('asset_change', stack.track.assets.length, serviceSeconds());
  add('user_change', stack.track.users.length, serviceSeconds());
  // Said, not asked: the data query answers for the data as it is now only.
  if (stack.queries.length > 0 && !off.has('data_query')) {
    lines.push({ endpoint: 'data_query', requests: 0, serviceSeconds: 0, more: 'saved queries are left out: the data query endpoint has no "as of" date, so a past count cannot be asked for' });
  }
  const knownRequests = lines.reduce((n, l) => n + l.requests, 0);
  const services = lines.flatMap((l) => Array.from({ length: l.requests }, () => l.serviceSeconds));
  return { stack: stack.name, ratePerMinute: rate, lines, knownRequests, knownSeconds: secondsAtServicePace(services, rate) };
}

/**
 * Seconds requests sent one after the other take, each `services[i]` at the service, through the
 * token bucket of src/cmdb/budget.ts (tokens come back while the request before is served).
 */
export function secondsAtServicePace(services: readonly number[], ratePerMinute: number): number {
  const burst = burstFor(ratePerMinute);
  const perSecond = ratePerMinute / 60;
  let t = 0;
  let tokens = burst;
  for (const s of services) {
    if (tokens < 1) {
      t += (1 - tokens) / perSecond;
      tokens = 1;
    }
    tokens -= 1;
    t += s;
    tokens = Math.min(burst, tokens + s * perSecond);
  }
  return t;
}

/** Seconds `requests` take at `ratePerMinute`, after the token bucket's burst goes out at once. */
export function secondsAtPace(requests: number, ratePerMinute: number): number {
  return (Math.max(0, requests - burstFor(ratePerMinute)) * 60) / ratePerMinute;
}

/** The plan as the dry run prints it. */
export function formatPlan(plan: StackPlan, range: { from: number; to: number }): string {
  const iso = (s: number) => new Date(s * 1000).toISOString();
  const out = [`stack ${plan.stack}: ${iso(range.from)} to ${iso(range.to)}, paced at ${plan.ratePerMinute} requests a minute (backfillRequestsPerMinute)`];
  const width = Math.max(...plan.lines.map((l) => l.endpoint.length));
  for (const l of plan.lines) out.push(`  ${l.endpoint.padEnd(width)}  ${String(l.requests).padStart(6)}${l.more ? `  ${l.more}` : ''}`);
  out.push(
    `  ${'total'.padEnd(width)}  ${String(plan.knownRequests).padStart(6)}  known in advance: ${formatDuration(Math.ceil(plan.knownSeconds))} at the pace and the service's speed (~${SERVICE_SECONDS_PER_REQUEST} s a request, ~${SERVICE_SECONDS_PER_ROW * 100} s per 100 rows of a page), plus what the answers add as above`,
  );
  return out.join('\n');
}
