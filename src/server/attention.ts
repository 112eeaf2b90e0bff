/**
 * What needs attention on one stack, from the samples the store holds now and the endpoints'
 * poll status, with the thresholds of the shipped alerts. Only label values that are names or ids
 * (connector, profile, merger, action_id, a status, an endpoint) go into a problem: never a free-text field.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import { ATTENTION_THRESHOLDS, type AttentionThresholds } from '../attention.js';
import { FAMILIES } from '../metrics/catalogue.js';
import type { Sample } from '../metrics/sample.js';
import type { EndpointStatus } from '../scheduler/endpoint-runner.js';
import { daysUntilExpiry } from '../time.js';

export type Severity = 'critical' | 'warning';

export interface Problem {
  readonly severity: Severity;
  /** What kind of problem: connector, action, license, ingestion, merger, endpoint, query (a saved query). */
  readonly area: 'connector' | 'action' | 'license' | 'ingestion' | 'merger' | 'endpoint' | 'query';
  /** The name or id it is about (connector/profile, Action name, endpoint, saved query), if any. */
  readonly subject?: string;
  /** More about the subject, shown on hover: an Action's id. */
  readonly subjectTitle?: string;
  /** A fixed sentence built from numbers, names and statuses only. */
  readonly text: string;
  /** The shipped alert that fires for the same problem: its runbook section says what to do. */
  readonly alert: string;
  /** The same problem from one poll to the next: the alert and its subject. */
  readonly key: string;
  /** The endpoint whose data or poll shows it: "new" means it appeared at that endpoint's newest poll. */
  readonly source: DataEndpoint;
  /** Since when, as the data says (the failed run, the crossing of a limit); else since it was first seen. */
  readonly since?: number;
  /** An endpoint's failure: the outcome of its poll (a stack's cause folds the failures it explains). */
  readonly outcome?: string;
}

export interface Attention {
  readonly problems: readonly Problem[];
  /** Days until the license expires; undefined when the license is not known. */
  readonly licenseDays?: number;
  /** The newest ingestion run's status (running, failed, …), if known. */
  readonly ingestion?: string;
  /** The stack's worst state: critical, warning, ok, or pending before any data. */
  readonly state: Severity | 'ok' | 'pending';
}

export interface AttentionInput {
  readonly samples: readonly Sample[];
  readonly endpoints: readonly Pick<EndpointStatus, 'endpoint' | 'state' | 'outcome' | 'retryAt'>[];
  /** Unix seconds. */
  readonly now: number;
  /** The pauses in force: the stack's (every request waits; the status page shows it as the stack's cause) and each endpoint group's. */
  readonly pauses?: readonly PauseShown[];
}

/** A pause as the status page shows it: who waits, until when, and the answer that set it. */
export interface PauseShown {
  readonly scope: 'stack' | 'group';
  /** The group that waits (group pauses). */
  readonly group?: string;
  /** Unix seconds. */
  readonly until: number;
  /** The status that set it; absent when the token endpoint failed without one. */
  readonly status?: number;
  /** The endpoint whose request got it. */
  readonly endpoint: DataEndpoint | 'access_token';
  /** The request that got it: `GET /CMDB/…`. */
  readonly request: string;
}

/** `a 503 to GET /CMDB/…`, or `the token endpoint failing (POST /CMDB/v1/access_token)`. */
export function pauseCause(p: Pick<PauseShown, 'status' | 'request'>): string {
  return p.status === undefined ? `the token endpoint failing (${p.request})` : `a ${p.status} to ${p.request}`;
}

const UNITS: ReadonlyArray<readonly [number, string]> = [
  [86400, 'd'],
  [3600, 'h'],
  [60, 'm'],
  [1, 's'],
];

/**
 * 45s, 1m, 1m 44s, 1h, 2h 5m, 3d 4h: a duration in seconds in its largest unit and the next one
 * (left out when 0), so that every interval and time on the page reads in the same units.
 */
export function shortDuration(seconds: number): string {
  const s = Math.round(Math.abs(seconds));
  const i = UNITS.findIndex(([size]) => s >= size);
  if (i < 0) return '0s';
  const [size, unit] = UNITS[i] as readonly [number, string];
  const big = Math.floor(s / size);
  const next = UNITS[i + 1];
  const small = next === undefined ? 0 : Math.floor((s - big * size) / next[0]);
  return small === 0 || next === undefined ? `${big}${unit}` : `${big}${unit} ${small}${next[1]}`;
}

/** "in 1m 44s" for a future time, "14m ago" for a past one, "now" within a second. */
export function relativeTime(now: number, at: number): string {
  const d = at - now;
  if (Math.abs(d) < 1) return 'now';
  return d > 0 ? `in ${shortDuration(d)}` : `${shortDuration(d)} ago`;
}

type Found = Omit<Problem, 'key' | 'source'> & { readonly source?: DataEndpoint; readonly key?: string };

/** The endpoint whose poll produces `family` (src/metrics/catalogue.ts). */
function sourceOf(family: string): DataEndpoint {
  const endpoint = FAMILIES.get(family)?.endpoint;
  if (endpoint === undefined) throw new Error(`${family} comes from no endpoint`);
  return endpoint;
}

/** A problem found in `family`'s data (or, without a family, about `found.source`), with its key. */
function problem(family: string | undefined, found: Found): Problem {
  const source = found.source ?? (family === undefined ? undefined : sourceOf(family));
  if (source === undefined) throw new Error(`${found.alert}: no source endpoint`);
  return { ...found, key: found.key ?? `${found.alert}:${found.subject ?? ''}`, source };
}

function connectorName(labels: Sample['labels']): string {
  const c = labels.connector ?? '?';
  return labels.profile ? `${c}/${labels.profile}` : c;
}

/** The stack's samples by family name. */
class Families {
  private readonly byName = new Map<string, Sample[]>();
  constructor(samples: readonly Sample[]) {
    for (const s of samples) {
      let list = this.byName.get(s.name);
      if (!list) this.byName.set(s.name, (list = []));
      list.push(s);
    }
  }
  all(name: string): readonly Sample[] {
    return this.byName.get(name) ?? [];
  }
  one(name: string): number | undefined {
    return this.all(name)[0]?.value;
  }
}

/** Connectors whose newest run is in error (since that run), or that have not run for longer than the limit. */
function connectorProblems(f: Families, now: number, t: AttentionThresholds): Problem[] {
  const out: Problem[] = [];
  const profileRun = new Map<string, { connector: string; at: number }>();
  for (const name of ['cmdb_connector_last_run_start_timestamp_seconds', 'cmdb_connector_last_run_end_timestamp_seconds', 'cmdb_connector_last_run_timestamp_seconds']) {
    // Later families win: the explicit last run, else the end, else the start (as the alert).
    for (const s of f.all(name)) if (s.value > 0) profileRun.set(connectorName(s.labels), { connector: s.labels.connector ?? '?', at: s.value });
  }
  for (const s of f.all('cmdb_connector_health')) {
    if (s.labels.health === 'error' && s.value === 1) {
      const subject = connectorName(s.labels);
      out.push(problem('cmdb_connector_health', { severity: 'warning', area: 'connector', subject, text: 'newest run failed', alert: 'CmdbConnectorError', since: profileRun.get(subject)?.at }));
    }
  }
  // Per connector over all its profiles, as CmdbConnectorNotRun: a run filed under "Default profile"
  // keeps the connector's named profile from looking dead.
  const lastRun = new Map<string, number>();
  for (const { connector, at } of profileRun.values()) lastRun.set(connector, Math.max(lastRun.get(connector) ?? at, at));
  for (const [connector, at] of [...lastRun].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (now - at > t.connectorMaxRunAgeSeconds) {
      const text = `has not run for ${shortDuration(now - at)} (limit ${shortDuration(t.connectorMaxRunAgeSeconds)})`;
      out.push(problem('cmdb_connector_last_run_timestamp_seconds', { severity: 'warning', area: 'connector', subject: connector, text, alert: 'CmdbConnectorNotRun', since: at + t.connectorMaxRunAgeSeconds }));
    }
  }
  return out;
}

/** Action jobs whose newest job did not succeed, since that job ran; named by the Action's name when known (the id on hover). */
function actionProblems(f: Families, t: AttentionThresholds): Problem[] {
  // PromQL's inline (?i) has no JavaScript form: the flag says it instead.
  const ok = new RegExp(`^(?:${t.actionJobOkStatuses.replace(/^\(\?i\)/, '')})$`, 'i');
  const actionNames = new Map<string, string>();
  for (const s of f.all('cmdb_action_info')) if (s.labels.action_id && s.labels.action_name) actionNames.set(s.labels.action_id, s.labels.action_name);
  const ranAt = new Map(f.all('cmdb_action_last_job_timestamp_seconds').map((s) => [s.labels.action_id, s.value] as const));
  const out: Problem[] = [];
  for (const s of f.all('cmdb_action_last_job_status')) {
    const status = s.labels.status ?? '';
    if (s.value !== 1 || ok.test(status)) continue;
    const id = s.labels.action_id ?? '?';
    const subject = actionNames.get(id) ?? id;
    // Keyed by the id: the name comes and goes with the Action list's polls.
    const found = { severity: 'warning', area: 'action', subject, subjectTitle: `Action id ${id}`, text: `newest job ${status}`, alert: 'CmdbActionJobFailed', since: ranAt.get(id), key: `CmdbActionJobFailed:${id}` } as const;
    out.push(problem('cmdb_action_last_job_status', found));
  }
  return out;
}

/** The license within its limits, since it crossed the limit. */
function licenseProblems(expiry: number | undefined, licenseDays: number | undefined, now: number, t: AttentionThresholds): Problem[] {
  if (licenseDays === undefined || expiry === undefined) return [];
  const days = `${Math.floor(licenseDays)} days left`;
  const found = (severity: Severity, text: string, alert: string, since: number) => [problem('cmdb_license_expiry_timestamp_seconds', { severity, area: 'license', text, alert, since })];
  if (licenseDays <= 0) return found('critical', `expired on ${new Date(expiry * 1000).toISOString().slice(0, 10)} (${relativeTime(now, expiry)})`, 'CmdbLicenseExpired', expiry);
  if (licenseDays <= t.licenseCriticalDays) return found('critical', `${days} (critical within ${t.licenseCriticalDays})`, 'CmdbLicenseExpiresVerySoon', expiry - t.licenseCriticalDays * 86400);
  if (licenseDays <= t.licenseWarningDays) return found('warning', `${days} (warning within ${t.licenseWarningDays})`, 'CmdbLicenseExpiresSoon', expiry - t.licenseWarningDays * 86400);
  return [];
}

/** The newest ingestion run failed or runs too long; no success for too long. */
function ingestionProblems(f: Families, endpoints: AttentionInput['endpoints'], now: number, t: AttentionThresholds): Problem[] {
  const out: Problem[] = [];
  const current = f.all('cmdb_ingestion_last_run_status').find((s) => s.value === 1)?.labels.status;
  const running = f.one('cmdb_ingestion_run_in_progress') === 1;
  const started = f.one('cmdb_ingestion_last_run_start_timestamp_seconds');
  const found = (family: string, p: Omit<Found, 'area'>) => out.push(problem(family, { ...p, area: 'ingestion' }));
  if (current === 'failed') found('cmdb_ingestion_last_run_status', { severity: 'warning', text: 'newest run failed', alert: 'CmdbIngestionRunFailed', since: started });
  if (running && started !== undefined && now - started > t.ingestionMaxRunSeconds) {
    const text = `running for ${shortDuration(now - started)} (limit ${shortDuration(t.ingestionMaxRunSeconds)})`;
    found('cmdb_ingestion_run_in_progress', { severity: 'warning', text, alert: 'CmdbIngestionRunTooLong', since: started + t.ingestionMaxRunSeconds });
  }
  const success = f.one('cmdb_ingestion_last_success_timestamp_seconds');
  const ingestionUp = endpoints.find((e) => e.endpoint === 'data_ingestion')?.state === 'ok';
  if (success !== undefined && now - success > t.ingestionMaxSuccessAgeSeconds) {
    const text = `no successful run for ${shortDuration(now - success)} (limit ${shortDuration(t.ingestionMaxSuccessAgeSeconds)})`;
    found('cmdb_ingestion_last_success_timestamp_seconds', { severity: 'critical', text, alert: 'CmdbIngestionNoRecentSuccess', since: success + t.ingestionMaxSuccessAgeSeconds });
  } else if (success === undefined && ingestionUp) {
    found('cmdb_ingestion_last_run_status', { severity: 'critical', text: 'no successful run listed', alert: 'CmdbIngestionNoSuccessListed' });
  }
  return out;
}

/** Merger freshness, when the exporter reports it. */
function mergerProblems(f: Families, now: number, t: AttentionThresholds): Problem[] {
  return f
    .all('cmdb_merger_last_run_timestamp_seconds')
    .filter((s) => s.value > 0 && now - s.value > t.mergerMaxRunAgeSeconds)
    .map((s) =>
      problem('cmdb_merger_last_run_timestamp_seconds', {
        severity: 'warning',
        area: 'merger',
        subject: s.labels.merger ?? '?',
        text: `has not run for ${shortDuration(now - s.value)} (limit ${shortDuration(t.mergerMaxRunAgeSeconds)})`,
        alert: 'CmdbMergerStale',
        since: s.value + t.mergerMaxRunAgeSeconds,
      }),
    );
}

/**
 * Saved queries refused by the field metadata check: not sent and without a count until the query
 * is fixed, whatever the CMDB does (a stack's cause does not explain them). The query's name is the
 * configuration's; why it is refused (the criterion) is in the stack's saved queries table.
 */
function queryProblems(f: Families): Problem[] {
  return f
    .all('cmdb_query_refused')
    .filter((s) => s.value === 1)
    .map((s) =>
      problem('cmdb_query_refused', {
        severity: 'warning',
        area: 'query',
        subject: s.labels.query ?? '?',
        text: 'refused, not sent: it does not fit the field metadata, so no count is exported (the saved queries table says why)',
        alert: 'CmdbQueryRefused',
      }),
    );
}

/**
 * Endpoint groups held back by the CMDB's word (a 5xx with Retry-After): the cause of their endpoints
 * going down. A pause of the whole stack is the stack's cause line instead (src/server/cause.ts).
 */
function groupPauseProblems(pauses: AttentionInput['pauses'], now: number): Problem[] {
  return (pauses ?? [])
    .filter((p) => p.scope === 'group' && p.until > now && p.endpoint !== 'access_token')
    .map((p) =>
      problem(undefined, {
        severity: 'warning',
        area: 'endpoint',
        subject: p.group,
        text: `${p.group} requests paused by ${pauseCause(p)}, ${relativeTime(now, p.until)} (a reload ends it)`,
        alert: 'CmdbEndpointDown',
        key: `paused:${p.group ?? ''}`,
        source: p.endpoint as DataEndpoint,
      }),
    );
}

/** Endpoints that fail or are forbidden (since when: the status page's memory of them). */
function endpointProblems(endpoints: AttentionInput['endpoints'], now: number): Problem[] {
  const out: Problem[] = [];
  for (const e of endpoints) {
    const about = { area: 'endpoint', subject: e.endpoint, source: e.endpoint, outcome: e.outcome } as const;
    if (e.state === 'forbidden') {
      const next = e.retryAt === undefined ? '' : `, next attempt ${relativeTime(now, e.retryAt)}`;
      out.push(problem(undefined, { ...about, severity: 'warning', text: `forbidden (403)${next}`, alert: 'CmdbEndpointForbidden' }));
    } else if (e.state === 'failing' || e.state === 'blocked') {
      out.push(problem(undefined, { ...about, severity: 'warning', text: `down (${e.outcome ?? 'error'})`, alert: 'CmdbEndpointDown' }));
    }
  }
  return out;
}

const ORDER: Record<Severity, number> = { critical: 0, warning: 1 };

export function attention(input: AttentionInput, t: AttentionThresholds = ATTENTION_THRESHOLDS): Attention {
  const { samples, endpoints, now } = input;
  const f = new Families(samples);
  const expiry = f.one('cmdb_license_expiry_timestamp_seconds');
  const licenseDays = expiry === undefined ? undefined : daysUntilExpiry(expiry, now);
  const running = f.one('cmdb_ingestion_run_in_progress') === 1;
  const ingestion = running ? 'running' : f.all('cmdb_ingestion_last_run_status').find((s) => s.value === 1)?.labels.status;
  const problems = [
    ...connectorProblems(f, now, t),
    ...actionProblems(f, t),
    ...licenseProblems(expiry, licenseDays, now, t),
    ...ingestionProblems(f, endpoints, now, t),
    ...mergerProblems(f, now, t),
    ...queryProblems(f),
    ...groupPauseProblems(input.pauses, now),
    ...endpointProblems(endpoints, now),
  ].sort((a, b) => ORDER[a.severity] - ORDER[b.severity]);
  const state = problems.some((p) => p.severity === 'critical')
    ? 'critical'
    : problems.length > 0
      ? 'warning'
      : endpoints.length > 0 && endpoints.every((e) => e.state === 'pending')
        ? 'pending'
        : 'ok';
  return { problems, licenseDays, ingestion, state };
}
