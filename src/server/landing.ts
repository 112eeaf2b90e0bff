/**
 * The status page at /. It answers first what needs attention (per stack, from the samples the
 * store holds, with the thresholds of the shipped alerts), with a summary table of every stack
 * when there are several, then per stack and endpoint: state, outcome, interval, last poll, last
 * success, next scheduled poll and a sanitised error with what to do; disabled and untracked
 * endpoints are listed with the reason they are not polled. It refreshes itself every 30 s.
 * Every dynamic value is HTML-escaped; error texts were scrubbed of secrets by the runner, and only
 * names, ids and statuses from the CMDB's data reach the page.
 */
import { pauseCause, relativeTime, shortDuration, type Attention, type PauseShown } from './attention.js';
import { anchor, attentionSection } from './attention-html.js';
import { COLUMNS, endpointTable, iso, restoredLine, when } from './endpoint-table.js';
import { escapeHtml } from './html.js';
import type { LandingModel, LandingStack } from './landing-model.js';
import { stackView, type StackView } from './stack-view.js';
import { queriesTable } from './landing-queries.js';

export type { LandingEndpoint, LandingModel, LandingStack } from './landing-model.js';

/** Seconds between the page's own reloads. */
export const REFRESH_SECONDS = 30;
/** From this many stacks on, a summary table with one row per stack comes first. */
export const SUMMARY_MIN_STACKS = 2;

function reloadBanner(now: number, r: LandingModel['rejectedReload']): string {
  if (r === undefined) return '';
  return `<p class="err reload" id="reload-rejected"><b>Configuration reload rejected</b> ${when(now, r.at)}: the previous configuration stays in force until a reload succeeds. <span class="reason">${escapeHtml(r.message)}</span></p>`;
}

function licenseText(a: Attention): string {
  if (a.licenseDays === undefined) return '—';
  return a.licenseDays <= 0 ? 'expired' : `${Math.floor(a.licenseDays)}`;
}

/** The lines shown for the stack (its cause counts as one critical line, the lines it explains not at all). */
function counts(v: StackView): { critical: number; warning: number } {
  let critical = v.cause ? 1 : 0;
  for (const l of v.lines) if (l.severity === 'critical') critical++;
  return { critical, warning: v.lines.length + (v.cause ? 1 : 0) - critical };
}

function summaryTable(items: ReadonlyArray<{ stack: LandingStack; view: StackView }>): string {
  const rows = items.map(({ stack, view }) => {
    const a = view.attention;
    const c = counts(view);
    return `<tr class="${a.state}"><td><a href="#${anchor(stack.name)}">${escapeHtml(stack.name)}</a></td><td class="state">${a.state}</td><td>${c.critical}</td><td>${c.warning}</td><td>${licenseText(a)}</td><td>${escapeHtml(a.ingestion ?? '—')}</td></tr>`;
  });
  return `<section id="summary"><h2>Stacks</h2>
<table><thead><tr><th>stack</th><th>state</th><th>critical</th><th>warnings</th><th>license days left</th><th>ingestion</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table></section>`;
}

function facts(a: Attention, s: LandingStack): string {
  const backlog = s.jobBacklog === undefined ? '' : ` · Action job fetches waiting: <b class="backlog">${s.jobBacklog}</b>`;
  return `<p class="facts">license days left: <b>${licenseText(a)}</b> · ingestion: <b>${escapeHtml(a.ingestion ?? '—')}</b> · state: <b class="${a.state}">${a.state}</b>${backlog}</p>`;
}

/** The poll plan against the budget: a warning line when it does not fit, a quiet one when it does. */
function demandLine(s: LandingStack): string {
  const d = s.demand;
  if (!d || !Number.isFinite(d.ratio)) return '';
  const figures = `${Math.round(d.perHour).toLocaleString('en-US')} requests an hour of a budget of ${d.budgetPerHour.toLocaleString('en-US')} (${Math.round(d.ratio * 100)} %)`;
  return d.ratio > 1
    ? `<p class="err demand">Poll plan above the budget: ${figures}. Polls wait for the budget and fall behind their intervals: lengthen intervals, track fewer names or raise rateLimitPerMinute (docs/scaling.md).</p>`
    : `<p class="hint demand">Poll plan: ${figures}.</p>`;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 1e7 ? 1 : 0)} MB`;
}

/** `Connector history: full scan, page 3 of 10, 74 MB, 1m 2s so far` while a scan runs; incremental reads off until …. */
export function connectorScanLine(now: number, scan: LandingStack['connectorScan']): string {
  if (!scan) return '';
  const p = scan.progress;
  const parts: string[] = [];
  if (p && p.endedAt === undefined) {
    const of = p.pagesTotal === undefined ? '' : ` of ${p.pagesTotal}`;
    parts.push(
      `${p.kind} scan running: page ${p.pagesRead}${of} read (${p.pageSize} rows a page), ${megabytes(p.bytes)}, ${shortDuration(now - p.startedAt)} so far; the connector endpoint keeps what it has meanwhile`,
    );
  } else if (p) {
    parts.push(`last ${p.kind} scan: ${p.pagesRead} page(s), ${megabytes(p.bytes)} in ${shortDuration((p.endedAt ?? now) - p.startedAt)}, ended ${relativeTime(now, p.endedAt ?? now)}`);
  }
  if (scan.incrementalOffUntil !== undefined) {
    parts.push(`incremental reads off until ${when(now, scan.incrementalOffUntil)} (the service answered unsorted pages): every poll reads every page`);
  }
  return parts.length === 0 ? '' : `<p class="scan">Connector history: ${parts.join(" · ")}</p>`;
}

const JOINING_TEXT = 'Added by a reload: its first polls are running, its endpoints show as pending until they end. It does not hold readiness (/readyz) back.';

/** The line under the title: ready or starting, and the stacks a reload added that are still joining. */
function readinessLine(m: LandingModel): string {
  const state = m.ready
    ? 'Ready: every list endpoint has answered its first poll (Action jobs and change history fill in after, within the request budget).'
    : 'Starting: some endpoints have not finished their first poll yet.';
  const joining = m.stacks.filter((s) => s.joining).map((s) => `<code>${escapeHtml(s.name)}</code>`);
  const added = joining.length === 0 ? '' : ` Added by a reload and pending their first polls (not holding readiness back): ${joining.join(', ')}.`;
  return `${state}${added}`;
}

/** One pause: the answer that set it, who waits until when, what ends it. */
function pauseLine(now: number, p: PauseShown): string {
  const cause = escapeHtml(pauseCause(p));
  if (p.scope === 'stack') {
    return `<p class="err paused">Paused by ${cause}: no request of this stack leaves until ${when(now, p.until)}. Its endpoints report down as their polls run out of time; a reload (SIGHUP or /-/reload) ends the pause.</p>`;
  }
  return `<p class="err paused">The ${escapeHtml(p.group ?? '')} group is paused by ${cause} (a Retry-After): its requests wait until ${when(now, p.until)}; the other endpoints are polled as usual. A reload (SIGHUP or /-/reload) ends the pause.</p>`;
}

function stackSection(now: number, s: LandingStack, a: Attention): string {
  const auth = s.unauthorized
    ? '<p class="err">The pre-issued token is rejected (401): replace it (CMDB_TOKEN / tokenFile).</p>'
    : s.endpoints.some((e) => e.outcome === 'rejected')
      ? '<p class="err">The token endpoint rejects this stack\'s client id and secret: every endpoint fails until they are fixed.</p>'
      : '';
  const paused = (s.pauses ?? []).map((p) => pauseLine(now, p)).join('');
  const joining = s.joining ? `<p class="hint joining">${JOINING_TEXT}</p>` : '';
  return `<section class="stack" id="${anchor(s.name)}"><h2>Stack <code>${escapeHtml(s.name)}</code> <span class="muted">${escapeHtml(s.baseUrl)}</span></h2>${joining}${auth}${paused}${restoredLine(now, s)}${demandLine(s)}${facts(a, s)}${connectorScanLine(now, s.connectorScan)}
${endpointTable(now, s)}${queriesTable(now, s.queries)}</section>`;
}

/** The query parameter the page's own refresh carries: when the page it replaces was made (ms since the epoch). */
export const SEEN_PARAM = 'seen';

/**
 * When the page the viewer looked at before was made (unix seconds), from the `seen` parameter of
 * the page's own refresh; undefined when absent or not a time up to `now` (a first look).
 */
export function lastLookOf(value: unknown, now: number): number | undefined {
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) return undefined;
  const at = Number(value) / 1000;
  return at <= now ? at : undefined;
}

/** What this page shows was seen by then: its time, or a problem first seen while it was made, if later. */
function shownAt(m: LandingModel): number {
  let at = m.now;
  for (const s of m.stacks) for (const first of s.seen?.values() ?? []) at = Math.max(at, first);
  return at;
}

/**
 * `telemetryPath`: where /metrics is served (--web.telemetry-path); `lastLook`: when the page the
 * viewer looked at before was made (lastLookOf), for what is new to them.
 */
export function renderLanding(m: LandingModel, telemetryPath = '/metrics', lastLook?: number): string {
  const items = m.stacks.map((stack) => ({ stack, view: stackView(stack, m.now, lastLook) }));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cmdb-exporter</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="${REFRESH_SECONDS};url=?${SEEN_PARAM}=${Math.ceil(shownAt(m) * 1000)}">
<style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:90rem}
table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{background:#f6f8fa}td.when{white-space:nowrap}.muted{color:#6e7781;font-weight:normal;font-size:.9em}.err{color:#cf222e}.hint{color:#6e7781;font-size:.9em}
tr.ok .state,b.ok,.okline{color:#1a7f37}tr.failing .state,tr.forbidden .state,tr.critical .state,b.critical{color:#cf222e}tr.pending .state,tr.blocked .state,tr.warning .state,b.warning{color:#9a6700}
tr.skipped{color:#6e7781}tr.restored .state{color:#9a6700}#attention ul{margin:.2rem 0 1rem;padding-left:1.2rem}#attention h3{margin:.6rem 0 0;font-size:1.05rem}
li .sev{display:inline-block;min-width:4.5rem;font-weight:600}li.critical .sev{color:#cf222e}li.warning .sev{color:#9a6700}
.state.ok{color:#1a7f37}.state.critical{color:#cf222e}.state.warning,.state.pending{color:#9a6700}h3 .state{font-size:.9em;font-weight:600}
li.cause{background:#ffebe9;border-left:4px solid #cf222e;padding:.35rem .5rem;margin:.2rem 0 .4rem -1.2rem;list-style:none}li.cause details{margin-top:.25rem}li.cause details ul{padding-left:1.2rem}
.since{color:#6e7781;font-size:.9em;white-space:nowrap}.new{display:inline-block;background:#0969da;color:#fff;border-radius:.6rem;padding:0 .45rem;font-size:.75em;font-weight:600;margin-left:.3rem}#made{color:#6e7781;font-size:.9em;margin:.2rem 0}
nav a{margin-right:1rem}a.runbook{font-size:.85em;margin-left:.4rem;white-space:nowrap}.reason{white-space:pre-wrap}code{overflow-wrap:anywhere}
@media (max-width:40rem){body{margin:.75rem}table.endpoints,table.endpoints tbody,table.endpoints tr,table.endpoints td{display:block;width:auto}
table.endpoints thead{display:none}table.endpoints tr{border-bottom:2px solid #d0d7de;padding:.3rem 0}
table.endpoints td{border:0;padding:.1rem .2rem}table.endpoints td::before{display:inline-block;min-width:6.5rem;color:#6e7781;font-weight:normal}
${COLUMNS.map((c, i) => `table.endpoints td:nth-child(${i + 1})::before{content:"${c}"}`).join('')}
table.endpoints td.details:empty{display:none}td.when{white-space:normal}
#summary table{font-size:.85em}#summary th,#summary td{padding:.3rem .25rem}#summary td:first-child{overflow-wrap:anywhere}}
</style></head><body>
<h1>cmdb-exporter <span class="muted">${escapeHtml(m.version)}</span></h1>
<nav><a href="${escapeHtml(telemetryPath.slice(1))}">${escapeHtml(telemetryPath)}</a><a href="sd">/sd</a><a href="healthz">/healthz</a><a href="readyz">/readyz</a></nav>
<p id="made">Made at <time datetime="${iso(m.now)}">${iso(m.now).replace('T', ' ').replace('Z', ' UTC')}</time>.</p>
<p id="readiness">${readinessLine(m)} <span class="muted">This page reloads every ${REFRESH_SECONDS}s.</span></p>
${reloadBanner(m.now, m.rejectedReload)}
${m.stacks.length >= SUMMARY_MIN_STACKS ? summaryTable(items) : ''}
${attentionSection(m.now, items, m.runbookBase)}
${items.map(({ stack, view }) => stackSection(m.now, stack, view.attention)).join('\n')}
</body></html>
`;
}
