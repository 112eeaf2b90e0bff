/**
 * The landing page at /: links to the other endpoints and, per stack and endpoint, the last poll's
 * outcome, time, duration and a sanitised error message with what to do. Every dynamic value is
 * HTML-escaped; error texts were scrubbed of secrets by the runner.
 */
import type { EndpointStatus } from '../scheduler/endpoint-runner.js';

export interface LandingStack {
  readonly name: string;
  readonly baseUrl: string;
  readonly unauthorized: boolean;
  readonly endpoints: readonly EndpointStatus[];
}

export interface LandingModel {
  readonly version: string;
  readonly ready: boolean;
  /** Unix seconds. */
  readonly now: number;
  readonly stacks: readonly LandingStack[];
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const STATE_LABEL: Record<EndpointStatus['state'], string> = {
  pending: 'pending',
  ok: 'ok',
  failing: 'failing',
  forbidden: 'forbidden: grant the permission or disable the endpoint',
  blocked: 'waiting on another endpoint',
};

function ago(now: number, at: number | undefined): string {
  if (at === undefined) return '—';
  const s = Math.max(0, Math.round(now - at));
  const when = new Date(at * 1000).toISOString().replace('.000Z', 'Z');
  return `${escapeHtml(when)} <span class="muted">(${s < 120 ? `${s}s` : `${Math.round(s / 60)}m`} ago)</span>`;
}

function row(now: number, e: EndpointStatus): string {
  const detail = e.error
    ? `<div class="err">${escapeHtml(e.error)}</div>${e.hint ? `<div class="hint">${escapeHtml(e.hint)}</div>` : ''}`
    : '';
  const retry = e.retryAt !== undefined ? `<div class="hint">next attempt ${ago(now, e.retryAt).replace(' ago', ' from now')}</div>` : '';
  const duration = e.lastDurationSeconds === undefined ? '—' : `${e.lastDurationSeconds.toFixed(2)}s`;
  return `<tr class="${e.state}"><td><code>${escapeHtml(e.endpoint)}</code></td><td class="state">${STATE_LABEL[e.state]}</td>
<td>${escapeHtml(e.outcome ?? '—')}</td><td class="when">${ago(now, e.lastPollAt)}</td><td>${duration}</td><td>${detail}${retry}</td></tr>`;
}

function stackSection(now: number, s: LandingStack): string {
  const auth = s.unauthorized
    ? '<p class="err">The pre-issued token is rejected (401): replace it (CMDB_TOKEN / tokenFile).</p>'
    : s.endpoints.some((e) => e.outcome === 'rejected')
      ? '<p class="err">The token endpoint rejects this stack\'s client id and secret: every endpoint fails until they are fixed.</p>'
      : '';
  return `<section><h2>Stack <code>${escapeHtml(s.name)}</code> <span class="muted">${escapeHtml(s.baseUrl)}</span></h2>${auth}
<table><thead><tr><th>endpoint</th><th>state</th><th>outcome</th><th>last poll</th><th>duration</th><th>details</th></tr></thead>
<tbody>${s.endpoints.map((e) => row(now, e)).join('\n')}</tbody></table></section>`;
}

export function renderLanding(m: LandingModel): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cmdb-exporter</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#1f2328;max-width:78rem}
table{border-collapse:collapse;width:100%;margin-bottom:1.5rem}th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #d0d7de;vertical-align:top}
th{background:#f6f8fa}td.when{white-space:nowrap}.muted{color:#6e7781;font-weight:normal;font-size:.9em}.err{color:#cf222e}.hint{color:#6e7781;font-size:.9em}
tr.ok .state{color:#1a7f37}tr.failing .state,tr.backoff .state{color:#cf222e}tr.pending .state,tr.blocked .state{color:#9a6700}
nav a{margin-right:1rem}
</style></head><body>
<h1>cmdb-exporter <span class="muted">${escapeHtml(m.version)}</span></h1>
<nav><a href="metrics">/metrics</a><a href="healthz">/healthz</a><a href="readyz">/readyz</a></nav>
<p id="readiness">${m.ready ? 'Ready: every enabled endpoint has finished its first poll.' : 'Starting: some endpoints have not finished their first poll yet.'}</p>
${m.stacks.map((s) => stackSection(m.now, s)).join('\n')}
</body></html>
`;
}
