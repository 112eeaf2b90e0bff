/**
 * What needs attention on one stack, from the samples the store holds now and the endpoints'
 * poll status, with the thresholds of the shipped alerts. Only label values that are names or ids
 * (connector, profile, merger, action_id, a status, an endpoint) go into a problem: never a free-text field.
 */
import { ATTENTION_THRESHOLDS, type AttentionThresholds } from '../attention.js';
import type { Sample } from '../metrics/sample.js';
import type { EndpointStatus } from '../scheduler/endpoint-runner.js';
import { daysUntilExpiry } from '../time.js';

export type Severity = 'critical' | 'warning';

export interface Problem {
  readonly severity: Severity;
  /** What kind of problem: connector, action, license, ingestion, merger, endpoint. */
  readonly area: 'connector' | 'action' | 'license' | 'ingestion' | 'merger' | 'endpoint';
  /** The name or id it is about (connector/profile, Action name, endpoint), if any. */
  readonly subject?: string;
  /** More about the subject, shown on hover: an Action's id. */
  readonly subjectTitle?: string;
  /** A fixed sentence built from numbers, names and statuses only. */
  readonly text: string;
  /** The shipped alert that fires for the same problem: its runbook section says what to do. */
  readonly alert: string;
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
  /** The pauses in force: the stack's (every request waits) and each endpoint group's. */
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

function connectorName(labels: Sample['labels']): string {
  const c = labels.connector ?? '?';
  return labels.profile ? `${c}/${labels.profile}` : c;
}

export function attention(input: AttentionInput, t: AttentionThresholds = ATTENTION_THRESHOLDS): Attention {
  const { samples, endpoints, now } = input;
  const problems: Problem[] = [];
  const byName = new Map<string, Sample[]>();
  for (const s of samples) {
    let list = byName.get(s.name);
    if (!list) byName.set(s.name, (list = []));
    list.push(s);
  }
  const all = (name: string): readonly Sample[] => byName.get(name) ?? [];
  const one = (name: string): number | undefined => all(name)[0]?.value;

  // Connectors: newest run in error, or not run for longer than the limit.
  for (const s of all('cmdb_connector_health')) {
    if (s.labels.health === 'error' && s.value === 1) {
      problems.push({ severity: 'warning', area: 'connector', subject: connectorName(s.labels), text: 'newest run failed', alert: 'CmdbConnectorError' });
    }
  }
  const profileRun = new Map<string, { connector: string; at: number }>();
  for (const name of ['cmdb_connector_last_run_start_timestamp_seconds', 'cmdb_connector_last_run_end_timestamp_seconds', 'cmdb_connector_last_run_timestamp_seconds']) {
    // Later families win: the explicit last run, else the end, else the start (as the alert).
    for (const s of all(name)) if (s.value > 0) profileRun.set(connectorName(s.labels), { connector: s.labels.connector ?? '?', at: s.value });
  }
  // Per connector over all its profiles, as CmdbConnectorNotRun: a run filed under "Default profile"
  // keeps the connector's named profile from looking dead.
  const lastRun = new Map<string, number>();
  for (const { connector, at } of profileRun.values()) lastRun.set(connector, Math.max(lastRun.get(connector) ?? at, at));
  for (const [connector, at] of [...lastRun].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (now - at > t.connectorMaxRunAgeSeconds) {
      problems.push({ severity: 'warning', area: 'connector', subject: connector, text: `has not run for ${shortDuration(now - at)} (limit ${shortDuration(t.connectorMaxRunAgeSeconds)})`, alert: 'CmdbConnectorNotRun' });
    }
  }

  // Action jobs whose newest job did not succeed.
  // PromQL's inline (?i) has no JavaScript form: the flag says it instead.
  const ok = new RegExp(`^(?:${t.actionJobOkStatuses.replace(/^\(\?i\)/, '')})$`, 'i');
  // Named by the Action's name when the Action list has it (the id on hover).
  const actionNames = new Map<string, string>();
  for (const s of all('cmdb_action_info')) if (s.labels.action_id && s.labels.action_name) actionNames.set(s.labels.action_id, s.labels.action_name);
  for (const s of all('cmdb_action_last_job_status')) {
    const status = s.labels.status ?? '';
    if (s.value === 1 && !ok.test(status)) {
      const id = s.labels.action_id ?? '?';
      const name = actionNames.get(id);
      problems.push({
        severity: 'warning',
        area: 'action',
        subject: name ?? id,
        subjectTitle: `Action id ${id}`,
        text: `newest job ${status}`,
        alert: 'CmdbActionJobFailed',
      });
    }
  }

  // License.
  const expiry = one('cmdb_license_expiry_timestamp_seconds');
  const licenseDays = expiry === undefined ? undefined : daysUntilExpiry(expiry, now);
  if (licenseDays !== undefined) {
    const days = `${Math.floor(licenseDays)} days left`;
    if (licenseDays <= 0 && expiry !== undefined) {
      const day = new Date(expiry * 1000).toISOString().slice(0, 10);
      problems.push({ severity: 'critical', area: 'license', text: `expired on ${day} (${relativeTime(now, expiry)})`, alert: 'CmdbLicenseExpired' });
    } else if (licenseDays <= t.licenseCriticalDays) {
      problems.push({ severity: 'critical', area: 'license', text: `${days} (critical within ${t.licenseCriticalDays})`, alert: 'CmdbLicenseExpiresVerySoon' });
    } else if (licenseDays <= t.licenseWarningDays) {
      problems.push({ severity: 'warning', area: 'license', text: `${days} (warning within ${t.licenseWarningDays})`, alert: 'CmdbLicenseExpiresSoon' });
    }
  }

  // Ingestion: the newest run's state, too long, no recent success.
  const current = all('cmdb_ingestion_last_run_status').find((s) => s.value === 1)?.labels.status;
  const running = one('cmdb_ingestion_run_in_progress') === 1;
  const ingestion = running ? 'running' : current;
  if (current === 'failed') problems.push({ severity: 'warning', area: 'ingestion', text: 'newest run failed', alert: 'CmdbIngestionRunFailed' });
  const started = one('cmdb_ingestion_last_run_start_timestamp_seconds');
  if (running && started !== undefined && now - started > t.ingestionMaxRunSeconds) {
    problems.push({ severity: 'warning', area: 'ingestion', text: `running for ${shortDuration(now - started)} (limit ${shortDuration(t.ingestionMaxRunSeconds)})`, alert: 'CmdbIngestionRunTooLong' });
  }
  const success = one('cmdb_ingestion_last_success_timestamp_seconds');
  const ingestionUp = endpoints.find((e) => e.endpoint === 'data_ingestion')?.state === 'ok';
  if (success !== undefined && now - success > t.ingestionMaxSuccessAgeSeconds) {
    problems.push({ severity: 'critical', area: 'ingestion', text: `no successful run for ${shortDuration(now - success)} (limit ${shortDuration(t.ingestionMaxSuccessAgeSeconds)})`, alert: 'CmdbIngestionNoRecentSuccess' });
  } else if (success === undefined && ingestionUp) {
    problems.push({ severity: 'critical', area: 'ingestion', text: 'no successful run listed', alert: 'CmdbIngestionNoSuccessListed' });
  }

  // Merger freshness, when the exporter reports it.
  for (const s of all('cmdb_merger_last_run_timestamp_seconds')) {
    if (s.value > 0 && now - s.value > t.mergerMaxRunAgeSeconds) {
      problems.push({ severity: 'warning', area: 'merger', subject: s.labels.merger ?? '?', text: `has not run for ${shortDuration(now - s.value)} (limit ${shortDuration(t.mergerMaxRunAgeSeconds)})`, alert: 'CmdbMergerStale' });
    }
  }

  // Requests held back by the CMDB's word: the cause of the endpoints below going down.
  for (const p of input.pauses ?? []) {
    if (p.until <= now) continue;
    const who = p.scope === 'stack' ? 'every request' : `${p.group} requests`;
    const text = `${who} paused by ${pauseCause(p)}, ${relativeTime(now, p.until)} (a reload ends it)`;
    problems.push({ severity: 'warning', area: 'endpoint', ...(p.scope === 'group' ? { subject: p.group } : {}), text, alert: p.scope === 'stack' ? 'CmdbStackPaused' : 'CmdbEndpointDown' });
  }

  // Endpoints that fail or are forbidden.
  for (const e of endpoints) {
    if (e.state === 'forbidden') {
      const next = e.retryAt === undefined ? '' : `, next attempt ${relativeTime(now, e.retryAt)}`;
      problems.push({ severity: 'warning', area: 'endpoint', subject: e.endpoint, text: `forbidden (403)${next}`, alert: 'CmdbEndpointForbidden' });
    } else if (e.state === 'failing' || e.state === 'blocked') {
      problems.push({ severity: 'warning', area: 'endpoint', subject: e.endpoint, text: `down (${e.outcome ?? 'error'})`, alert: 'CmdbEndpointDown' });
    }
  }

  const order: Record<Severity, number> = { critical: 0, warning: 1 };
  problems.sort((a, b) => order[a.severity] - order[b.severity]);
  const state = problems.some((p) => p.severity === 'critical')
    ? 'critical'
    : problems.length > 0
      ? 'warning'
      : endpoints.length > 0 && endpoints.every((e) => e.state === 'pending')
        ? 'pending'
        : 'ok';
  return { problems, licenseDays, ingestion, state };
}
