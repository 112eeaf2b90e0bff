/**
 * The status page's table of one stack's endpoints: per endpoint its state (restored series said
 * so, with their age), outcome, interval, last poll, last success, next poll, duration and details
 * (the error and what to do; for a healthy endpoint the series it serves; for one not polled, what
 * would have it polled), then the endpoints that are not polled.
 */
import type { EndpointStatus } from '../scheduler/endpoint-runner.js';
import { relativeTime, shortDuration } from './attention.js';
import { escapeHtml } from './html.js';
import type { LandingEndpoint, LandingStack, SkippedEndpoint } from './landing-model.js';

const STATE_LABEL: Record<EndpointStatus['state'], string> = {
  pending: 'pending',
  ok: 'ok',
  failing: 'failing',
  forbidden: 'forbidden: grant the permission or disable the endpoint',
  blocked: 'waiting on another endpoint',
};

const SKIPPED_LABEL: Record<SkippedEndpoint['reason'], string> = {
  disabled: 'disabled (disabledEndpoints)',
  untracked: 'not polled: no tracked names',
  unqueried: 'not polled: no saved queries',
};

export function iso(at: number): string {
  return new Date(Math.round(at) * 1000).toISOString().replace('.000Z', 'Z');
}

/** `2026-11-23T07:05:47Z (in 14m)` or `… (14m ago)`; a dash when unknown. */
export function when(now: number, at: number | undefined): string {
  if (at === undefined) return '—';
  return `<time datetime="${iso(at)}">${iso(at)}</time> <span class="muted">(${relativeTime(now, at)})</span>`;
}

/** For table cells: `in 14m` / `14m ago`, the exact time on hover (keeps 200 stacks compact). */
function cell(now: number, at: number | undefined): string {
  return at === undefined ? '—' : `<span title="${iso(at)}">${relativeTime(now, at)}</span>`;
}

/** The next poll, or "polling now" while one runs (started when, on hover). */
function nextPoll(now: number, e: LandingEndpoint): string {
  if (e.pollingSince !== undefined) return `<span class="polling" title="started ${iso(e.pollingSince)}">polling now</span>`;
  return cell(now, e.nextPollAt);
}

/** Column names, also shown beside each value when the table is stacked on a narrow screen (by CSS, not per cell: 200 stacks stay small). */
export const COLUMNS = ['endpoint', 'state', 'outcome', 'interval', 'last poll', 'last success', 'next poll', 'duration', 'details'] as const;

function cells(values: readonly string[], classes: Partial<Record<(typeof COLUMNS)[number], string>> = {}): string {
  return values
    .map((v, i) => {
      const cls = classes[COLUMNS[i] as (typeof COLUMNS)[number]];
      return `<td${cls ? ` class="${cls}"` : ''}>${v}</td>`;
    })
    .join('');
}

/** The state cell: a restored endpoint says so, with how old its series are. */
function stateText(now: number, e: LandingEndpoint): string {
  if (!e.restored || e.state !== 'ok') return STATE_LABEL[e.state];
  const age = e.lastSuccessAt === undefined ? '' : `, ${shortDuration(now - e.lastSuccessAt)} old`;
  return `restored${age}`;
}

/** What a healthy row says in its details: what the exporter serves of the endpoint, or why it waits. */
function served(now: number, e: LandingEndpoint): string {
  const series = e.series === undefined ? '' : `${e.series.toLocaleString('en-US')} series`;
  if (e.restored) {
    const age = e.lastSuccessAt === undefined ? '' : ` (${shortDuration(now - e.lastSuccessAt)} old)`;
    return `<div class="hint restored">${series || 'series'} kept at the last stop${age}, served until its first poll since the restart answers</div>`;
  }
  if (e.state === 'pending') return '<div class="hint">first poll not finished yet</div>';
  return series === '' ? '' : `<span class="muted">${series}</span>`;
}

function row(now: number, e: LandingEndpoint): string {
  const detail = e.error
    ? `<div class="err">${escapeHtml(e.error)}</div>${e.hint ? `<div class="hint">${escapeHtml(e.hint)}</div>` : ''}`
    : served(now, e);
  const retry = e.retryAt !== undefined ? `<div class="hint">next attempt ${when(now, e.retryAt)}</div>` : '';
  const success = e.state !== 'ok' && e.lastSuccessAt === undefined && e.state !== 'pending' ? 'never' : cell(now, e.lastSuccessAt);
  const duration = e.lastDurationSeconds === undefined ? '—' : `${e.lastDurationSeconds.toFixed(2)}s`;
  const interval = e.intervalSeconds === undefined ? '—' : shortDuration(e.intervalSeconds);
  const values = [`<code>${escapeHtml(e.endpoint)}</code>`, stateText(now, e), escapeHtml(e.outcome ?? '—'), interval, cell(now, e.lastPollAt), success, nextPoll(now, e), duration, `${detail}${retry}`];
  const cls = e.restored && e.state === 'ok' ? 'restored' : e.state;
  return `<tr class="${cls}">${cells(values, { state: 'state', 'last poll': 'when', 'last success': 'when', 'next poll': 'when', details: 'details' })}</tr>`;
}

/** What to do to have a skipped endpoint polled. */
const SKIPPED_DETAIL: Record<SkippedEndpoint['reason'], string> = {
  disabled: 'remove it from disabledEndpoints to poll it',
  untracked: 'name assets or users under track to poll it',
  unqueried: 'add saved queries (queries) to poll it',
};

function skippedRow(s: SkippedEndpoint): string {
  const values = [`<code>${escapeHtml(s.endpoint)}</code>`, SKIPPED_LABEL[s.reason], '—', '—', '—', '—', '—', '—', `<span class="muted">${SKIPPED_DETAIL[s.reason]}</span>`];
  return `<tr class="skipped">${cells(values, { state: 'state', details: 'details' })}</tr>`;
}

/** After a restart with --storage.path: which endpoints still serve what the last process kept, and how old it is. */
export function restoredLine(now: number, s: LandingStack): string {
  const restored = s.endpoints.filter((e) => e.restored && e.state === 'ok');
  if (restored.length === 0) return '';
  const ages = restored.map((e) => (e.lastSuccessAt === undefined ? 0 : now - e.lastSuccessAt));
  const oldest = shortDuration(Math.max(...ages));
  return `<p class="hint restored-line">Restored: ${restored.length} endpoint(s) serve the series kept at the last stop (--storage.path), up to ${oldest} old, until their first poll since the restart answers.</p>`;
}

/** The table of `s`'s endpoints, polled and not. */
export function endpointTable(now: number, s: LandingStack): string {
  return `<table class="endpoints"><thead><tr>${COLUMNS.map((c) => `<th>${c}</th>`).join('')}</tr></thead>
<tbody>${[...s.endpoints.map((e) => row(now, e)), ...(s.skipped ?? []).map(skippedRow)].join('\n')}</tbody></table>`;
}
