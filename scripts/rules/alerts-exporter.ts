/** Alerts about the exporter itself: scrape target, CMDB endpoints, token, rate budget, series cap. */
import { STACK, alertFactory, counted, enclose, percentOf, selector } from './model.js';
import type { AlertRule, RuleGroup, Thresholds } from './model.js';
import { RECORDS } from './recording.js';

/** Endpoints whose 403 is expected on ordinary tokens: only CmdbEndpointForbidden speaks of them. */
const OPTIONAL_WHEN_FORBIDDEN = 'endpoint="data_ingestion_next"';

/**
 * The ten one-minute steps of the last 10 minutes. A subquery's steps fall on whole minutes, and its
 * range is closed on Prometheus 2 and left-open on 3: `[10m:1m]` evaluated on a whole minute (every
 * evaluation of promtool's tests) takes 11 steps on 2 and 10 on 3. One millisecond short of 10
 * minutes it takes 10 on both (Prometheus counts time in milliseconds).
 */
const PAUSED_STEPS = '9m59s999ms:1m';

/** Requests of a stack whose outcome matches `outcome`, counted over `window`, all endpoints together. */
function requestCount(t: Thresholds, outcome: string, window: string): string {
  return enclose(counted(t, 'cmdb_endpoint_requests_total', outcome, window), 'sum without (endpoint, outcome)');
}

function unreachable(t: Thresholds, outcome: string): string {
  return requestCount(t, outcome, t.unreachableWindow);
}

export function exporterAlerts(t: Thresholds): RuleGroup<AlertRule> {
  const alert = alertFactory(t);
  const s = (metric: string, extra?: string) => selector(t, metric, extra);
  const endpoint = `endpoint {{ $labels.endpoint }} of ${STACK}`;
  return {
    name: 'cmdb-exporter.alerts',
    rules: [
      alert(
        'CmdbExporterDown',
        'critical',
        // One series per scrape target: with /sd, one per stack and one for the exporter's own
        // metrics, all on the exporter's address (instance). `scope` says whether the exporter
        // itself is down (no target of its instance answers: every one of them fires) or one
        // target fails while the others answer (a scrape timeout or sample_limit of that target):
        // Alertmanager's inhibitions tell the two apart (scripts/alertmanager/config.ts).
        `label_replace(\n  ${s('up')} == 0\n  unless on (job, instance)\n  ${s('up')} == 1,\n  "scope", "exporter", "", ""\n)\nor\nlabel_replace(\n  ${s('up')} == 0\n  and on (job, instance)\n  ${s('up')} == 1,\n  "scope", "target", "", ""\n)`,
        'Prometheus cannot scrape the CMDB exporter.',
        `{{ if eq $labels.scope "target" }}Prometheus cannot scrape {{ if $labels.stack }}the target of stack {{ $labels.stack }}{{ else }}the exporter's own target (its process and configuration metrics){{ end }} of the CMDB exporter {{ $labels.instance }} (job {{ $labels.job }}) for ${t.for.CmdbExporterDown}, while its other targets answer: the exporter runs, {{ if $labels.stack }}but this stack's CMDB metrics are not updated and its other alerts are blind{{ else }}and every stack's metrics are scraped{{ end }}. A scrape timeout or sample_limit of that target is the usual reason.{{ else }}Prometheus cannot scrape the CMDB exporter {{ $labels.instance }} (job {{ $labels.job }}) for ${t.for.CmdbExporterDown}: no CMDB metric of the stacks it serves is updated and the other CMDB alerts are blind.{{ end }}`,
      ),
      alert(
        'CmdbExporterAbsent',
        'critical',
        `absent(${s('up')})`,
        'Prometheus has no CMDB exporter target to scrape.',
        `Prometheus has no scrape target for job {{ $labels.job }} for ${t.for.CmdbExporterAbsent}: the exporter is missing from the scrape configuration or from service discovery, so no CMDB alert can fire.`,
      ),
      alert(
        'CmdbUnreachable',
        'critical',
        // The cause of a stack whose every endpoint fails: none of its requests is answered. Counted
        // from the requests themselves (retries included: a failing group is retried at most 2
        // minutes apart), so it fires minutes before the endpoints' own alerts, which it holds back.
        `${unreachable(t, 'outcome=~"network|timeout"')} > 0\nunless on (job, instance, stack)\n${unreachable(t, 'outcome!~"network|timeout"')} > 0`,
        'The CMDB is unreachable.',
        `No request of the exporter to the CMDB of ${STACK} has been answered for ${t.unreachableWindow} or more: {{ $value | humanize }} requests in the last ${t.unreachableWindow} failed to connect or timed out, none got an answer. Every endpoint of the stack fails and its data is frozen (kept for ${t.endpointStaleIntervals} poll intervals, then dropped); the stack's endpoint, staleness and data alerts are held back while this fires.`,
        undefined,
        // The CMDB answers again: the endpoints come back one retry at a time (30 s to 2 minutes
        // apart), and until they have, their alerts would be notified without their cause.
        t.unreachableKeepFiringFor,
      ),
      alert(
        'CmdbEndpointDown',
        'warning',
        // `up` is 0 from a failed poll until a poll or retry succeeds (retries at most 2 minutes
        // apart), and before the first poll finished: 15 minutes of 0 are several failed attempts.
        // The next-run endpoint refused (403, as the real service does to ordinary tokens) is
        // CmdbEndpointForbidden's alone, not "down" for ever. A 403 on any other endpoint still
        // counts as down: its data is missing.
        `${s('cmdb_endpoint_up')} == 0\nunless on (job, instance, stack, endpoint)\n${s('cmdb_endpoint_forbidden', OPTIONAL_WHEN_FORBIDDEN)} == 1`,
        'A CMDB endpoint is failing.',
        `CMDB ${endpoint} has read down at every evaluation for ${t.for.CmdbEndpointDown}: its poll failed, and so did every retry since (the exporter retries a failed poll after 30 s, doubling up to 2 minutes; a 403 only after forbiddenBackoffSeconds), or its first poll since the exporter started has not finished. Its last good data is kept until it is ${t.endpointStaleIntervals} poll intervals old, then it disappears. The exporter log and its landing page name the error.`,
      ),
      alert(
        'CmdbEndpointForbidden',
        'info',
        `${s('cmdb_endpoint_forbidden')} == 1`,
        "A CMDB endpoint is forbidden to the exporter's token.",
        `The CMDB answers 403 to the exporter on ${endpoint}: the token lacks the permission (on the real service, data_ingestion_next needs elevated rights that ordinary API tokens lack). Grant the permission to the token, or add {{ $labels.endpoint }} to disabledEndpoints of the stack. The exporter retries it on a slow back-off; the metrics of this endpoint are missing meanwhile.`,
      ),
      alert(
        'CmdbEndpointDataStale',
        'warning',
        // A full scan of the connector run history may outlast 3 intervals (one page per request,
        // pages up to timeoutSeconds on the real service); the endpoint keeps its last data
        // meanwhile. While the scan runs it is making progress: one that gets no page for its
        // stall limit fails, and CmdbEndpointDown speaks of it.
        `(\n  time() - ${s('cmdb_endpoint_last_success_timestamp_seconds')}\n    > ${t.endpointStaleIntervals} * ${s('cmdb_endpoint_poll_interval_seconds')}\n)\nunless on (job, instance, stack, endpoint)\n${s('cmdb_endpoint_forbidden', OPTIONAL_WHEN_FORBIDDEN)} == 1\nunless on (job, instance, stack, endpoint)\nlabel_replace(${s('cmdb_connector_scan_in_progress')} == 1, "endpoint", "connector", "", "")`,
        'Data of a CMDB endpoint is stale.',
        `The newest successful poll of CMDB ${endpoint} is {{ $value | humanizeDuration }} old, more than ${t.endpointStaleIntervals} poll intervals: dashboards and alerts based on it show old data or none.`,
      ),
      alert(
        'CmdbTokenRejected',
        'critical',
        // Client credentials: the token endpoint refuses them. A pre-issued token: the CMDB answers
        // 401 and nothing else to the stack's requests.
        [
          `${enclose(counted(t, 'cmdb_token_requests_total', 'outcome="rejected"', t.counterWindow), 'sum without (outcome)')} > 0`,
          'or on (job, instance, stack)',
          enclose(`${requestCount(t, 'outcome="401"', t.counterWindow)} > 0\nunless on (job, instance, stack)\n${requestCount(t, 'outcome!="401"', t.counterWindow)} > 0`),
        ].join('\n'),
        "The CMDB rejects the exporter's credentials.",
        `{{ $value | humanize }} token requests for ${STACK} (or its requests with a pre-issued token) were rejected in the last ${t.counterWindow}: the client id, secret or token is wrong, expired or revoked, and every data endpoint of the stack fails; its endpoint, staleness and data alerts are held back while this fires.`,
      ),
      alert(
        'CmdbRateBudgetNearlyExhausted',
        'warning',
        `${s(RECORDS.budgetRatio)} > ${t.rateBudgetRatio}`,
        'The exporter has nearly used up its CMDB request budget.',
        `Requests to the CMDB of ${STACK} over the last 5 minutes use {{ $value | humanizePercentage }} of the configured rateLimitPerMinute (alert above ${percentOf(t.rateBudgetRatio)}%): polls will start waiting for the budget and data will lag.`,
      ),
      alert(
        'CmdbRateLimited',
        'warning',
        `${requestCount(t, 'outcome="429"', t.counterWindow)} > 0`,
        'The CMDB keeps rate limiting the exporter.',
        `{{ $value | humanize }} requests to the CMDB of ${STACK} were refused with HTTP 429 (rate limited) in the last ${t.counterWindow}, for ${t.for.CmdbRateLimited}: the budget is too high for the service or another client shares it.`,
      ),
      alert(
        'CmdbStackPaused',
        'critical',
        // One pause lasts retries.maxRetryAfterSeconds at most (120 s by default): a CMDB that keeps
        // answering 429 pauses the stack again and again, so the alert looks at the share of time paused.
        `avg_over_time((${s('cmdb_rate_limit_paused_until_timestamp_seconds')} > bool time())[${PAUSED_STEPS}]) > 0.5`,
        "The CMDB keeps pausing the exporter's requests.",
        `The CMDB asked the exporter to wait again and again (429s, or a Retry-After on a 502, 503 or 504): every request of ${STACK} was held back {{ $value | humanizePercentage }} of the last 10 minutes (each pause lasts retries.maxRetryAfterSeconds at most), and its endpoints go down as their polls run out of time (their alerts are held back while this fires). A reload of the exporter ends a pause.`,
      ),
      alert(
        'CmdbSeriesDropped',
        'warning',
        `${enclose(counted(t, 'cmdb_series_dropped_total', '', t.counterWindow))} > 0`,
        'The exporter drops series at its series cap.',
        `{{ $value | humanize }} series of ${STACK} were dropped in the last ${t.counterWindow} because the stack exceeds its maxSeries cap: some connectors, Actions or tasks are missing from the metrics.`,
      ),
      alert(
        'CmdbConfigReloadFailed',
        'warning',
        `${s('cmdb_config_last_reload_successful')} == 0`,
        'The CMDB exporter rejected its new configuration.',
        'The last configuration reload of the CMDB exporter {{ $labels.instance }} was rejected; it keeps running with the previous configuration. The exporter log names the key that is wrong.',
      ),
    ],
  };
}
