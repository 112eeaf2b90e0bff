/**
 * The saved inventory queries of a stack on the status page: one row per query with its state,
 * count, the rebuild the count belongs to, its last run, whether it runs at the next poll and why,
 * and for a refused or failing query the reason (the query and criterion named, scrubbed).
 */
import type { QueryStatus } from '../scheduler/query-poller.js';
import { relativeTime } from './attention.js';
import { escapeHtml } from './html.js';

const STATE: Record<QueryStatus['state'], string> = {
  pending: 'pending',
  ok: 'ok',
  refused: 'refused: not sent, fix the query',
  failed: 'failing',
};

const NEXT: Record<QueryStatus['next'], string> = {
  start: 'at the next poll (first run)',
  rebuild: 'at the next poll (the data was rebuilt)',
  daily: 'at the next poll (a day since the last run)',
  retry: 'at the next poll (retry)',
  waiting: 'after the first read of the connector history',
  spacing: 'once intervals.queries has passed since the last run (the data was rebuilt)',
  current: 'at the next rebuild (or a day after the last run)',
};

function ago(now: number, at: number | undefined): string {
  return at === undefined ? '—' : `<span title="${new Date(Math.round(at) * 1000).toISOString()}">${relativeTime(now, at)}</span>`;
}

function row(now: number, q: QueryStatus): string {
  // The row classes of the endpoint table: a refused query needs fixing as a failing one does.
  const state = q.state === 'failed' || q.state === 'refused' ? 'failing' : q.state;
  const records = q.records === undefined ? '—' : q.records.toLocaleString('en-US');
  const reason = q.reason === undefined ? '' : `<div class="${q.state === 'ok' || q.state === 'pending' ? 'hint' : 'err'}">${escapeHtml(q.reason)}</div>`;
  const cells = [`<code>${escapeHtml(q.name)}</code>`, q.table, STATE[q.state], records, ago(now, q.rebuiltAt), ago(now, q.ranAt), NEXT[q.next], reason];
  return `<tr class="${state}">${cells.map((c, i) => `<td${i === 2 ? ' class="state"' : ''}>${c}</td>`).join('')}</tr>`;
}

/** The queries table of a stack; empty without saved queries. */
export function queriesTable(now: number, queries: readonly QueryStatus[] | undefined): string {
  if (!queries || queries.length === 0) return '';
  const head = ['query', 'table', 'state', 'records', 'data as of', 'last run', 'next run', 'details'].map((c) => `<th>${c}</th>`).join('');
  return `<h3>Saved queries <span class="muted">counted once per rebuild of the data</span></h3>
<table class="queries"><thead><tr>${head}</tr></thead><tbody>${queries.map((q) => row(now, q)).join('\n')}</tbody></table>`;
}
