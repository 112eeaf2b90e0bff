/**
 * The status page leads with a stack's cause (src/server/cause.ts, src/server/stack-view.ts):
 * the CMDB unreachable (judged from the stack's recent requests), the credentials rejected, or every
 * request paused comes first as one critical line with since when and how old the data below it
 * is, the endpoint lines it explains folded under it; every line says since when, those that
 * appeared in the newest poll of their endpoint are marked new, and the page says when it was made.
 */
import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS } from '../../src/api/endpoints.js';
import type { Sample } from '../../src/metrics/sample.js';
import type { EndpointStatus } from '../../src/scheduler/endpoint-runner.js';
import { stackCause, UNREACHABLE_AFTER_SECONDS } from '../../src/server/cause.js';
import { renderLanding, type LandingEndpoint, type LandingStack } from '../../src/server/landing.js';
import { ProblemMemory } from '../../src/server/problem-memory.js';
import { stackView, viewKeys } from '../../src/server/stack-view.js';

const NOW = 1_795_416_707; // 2026-11-23T06:51:47Z

function endpoint(e: (typeof DATA_ENDPOINTS)[number], over: Partial<LandingEndpoint> = {}): LandingEndpoint {
  return { endpoint: e, state: 'ok', consecutiveFailures: 0, outcome: 'success', lastPollAt: NOW - 20, lastSuccessAt: NOW - 20, intervalSeconds: 300, nextPollAt: NOW + 280, ...over };
}

/** A healthy stack's license and ingestion, and `samples`. */
function stack(name: string, over: Partial<LandingStack> = {}, samples: readonly Sample[] = []): LandingStack {
  const healthy: Sample[] = [
    { name: 'cmdb_license_expiry_timestamp_seconds', labels: {}, value: NOW + 200 * 86400 },
    { name: 'cmdb_ingestion_last_run_status', labels: { status: 'success' }, value: 1 },
    { name: 'cmdb_ingestion_last_success_timestamp_seconds', labels: {}, value: NOW - 3600 },
  ];
  return { name, baseUrl: `https://${name}.example.com`, unauthorized: false, endpoints: DATA_ENDPOINTS.map((e) => endpoint(e)), samples: [...healthy, ...samples], ...over };
}

/** Every endpoint failing with `outcome` since `since`, the last success `lastSuccess` ago. */
function failing(outcome: EndpointStatus['outcome'], lastSuccess: number): LandingEndpoint[] {
  return DATA_ENDPOINTS.map((e) => endpoint(e, { state: 'failing', outcome, error: 'connect ECONNREFUSED', consecutiveFailures: 3, lastPollAt: NOW - 5, lastSuccessAt: NOW - lastSuccess }));
}

const connectorError: Sample[] = [
  { name: 'cmdb_connector_health', labels: { connector: 'ldap', profile: 'p', health: 'error' }, value: 1 },
  { name: 'cmdb_connector_last_run_timestamp_seconds', labels: { connector: 'ldap', profile: 'p' }, value: NOW - 3600 },
];

describe('the cause of a stack', () => {
  const down = { failingSince: NOW - 90, failures: 7, lastAnswerAt: NOW - 95 };

  it('is "CMDB unreachable" once every request of the last minute or so failed to connect or timed out', () => {
    const cause = stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: down });
    expect(cause).toMatchObject({ alert: 'CmdbUnreachable', since: NOW - 90 });
    // Not yet a minute, or a single failure, or an answer since: not unreachable.
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: { ...down, failingSince: NOW - UNREACHABLE_AFTER_SECONDS + 1 } })).toBeUndefined();
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: { ...down, failures: 1 } })).toBeUndefined();
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: { failures: 0, lastAnswerAt: NOW - 1 } })).toBeUndefined();
  });

  it('is "CMDB unreachable" at once when the failures in a row are of two endpoints, whatever the intervals (issue 37)', () => {
    // The first poll after the cause: two requests to two endpoints sent 3 s ago, neither answered.
    const fresh = { failingSince: NOW - 3, failures: 2, failingEndpoints: 2, lastAnswerAt: NOW - 40 };
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: fresh })).toMatchObject({ alert: 'CmdbUnreachable', since: NOW - 3 });
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: fresh })?.text).toBe('none of the last 2 requests (to 2 endpoints) got an answer: each failed to connect or timed out');
    // One endpoint alone (a page too slow for its timeout) needs the minute; one request, never.
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: { ...fresh, failingEndpoints: 1 } })).toBeUndefined();
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], requests: { ...fresh, failures: 1 } })).toBeUndefined();
  });

  it('is the credentials when the pre-issued token or the client id and secret are rejected, the pause while the CMDB pauses the stack', () => {
    expect(stackCause({ now: NOW, unauthorized: true, endpoints: [] })?.alert).toBe('CmdbTokenRejected');
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [{ outcome: 'rejected' }] })?.alert).toBe('CmdbTokenRejected');
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], pause: { until: NOW + 60, status: 429, request: 'GET /x' } })?.alert).toBe('CmdbStackPaused');
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [], pause: { until: NOW - 1, status: 429, request: 'GET /x' } })).toBeUndefined();
    expect(stackCause({ now: NOW, unauthorized: false, endpoints: [{ outcome: '503' }] })).toBeUndefined();
  });

  it('comes first, critical, and folds the endpoint lines it explains; the data problems stay', () => {
    const view = stackView(stack('eu', { endpoints: failing('network', 120), requests: down }, connectorError), NOW);
    expect(view.attention.state).toBe('critical');
    expect(view.cause?.title).toBe('CMDB unreachable');
    expect(view.cause?.dataAt).toBe(NOW - 120);
    expect(view.folded.map((l) => l.key)).toEqual(DATA_ENDPOINTS.map((e) => `CmdbEndpointDown:${e}`));
    expect(view.lines.map((l) => l.key)).toEqual(['CmdbConnectorError:ldap/p']);
  });

  it('does not explain a refused saved query: the configuration\'s to fix, a line of its own under any cause', () => {
    const refused: Sample[] = [
      { name: 'cmdb_query_refused', labels: { query: 'quoted-number' }, value: 1 },
      { name: 'cmdb_query_refused', labels: { query: 'servers' }, value: 0 },
    ];
    for (const over of [{ endpoints: failing('network', 120), requests: down }, { unauthorized: true }, { pauses: [{ scope: 'stack', until: NOW + 60, status: 429, endpoint: 'license', request: 'GET /x' }] as const }]) {
      const view = stackView(stack('eu', over, refused), NOW);
      expect(view.cause).toBeDefined();
      expect(view.lines.map((l) => [l.key, l.alert, l.subject])).toEqual([['CmdbQueryRefused:quoted-number', 'CmdbQueryRefused', 'quoted-number']]);
      expect(view.folded.map((l) => l.key)).not.toContain('CmdbQueryRefused:quoted-number');
    }
  });

  it('is not there for endpoints that fail for reasons of their own', () => {
    const view = stackView(stack('eu', { endpoints: failing('503', 120), requests: { failures: 0, lastAnswerAt: NOW - 5 } }), NOW);
    expect(view.cause).toBeUndefined();
    expect(view.attention.state).toBe('warning');
    expect(view.lines).toHaveLength(DATA_ENDPOINTS.length);
  });
});

describe('since when, and what is new', () => {
  it('takes since from the data, else from when the page first saw the problem; new while its endpoint has not polled since', () => {
    const memory = new ProblemMemory();
    // Seen first after the license poll at NOW - 600 (which found it down), before the connector's newest poll.
    const earlier = stack('eu', { endpoints: DATA_ENDPOINTS.map((e) => endpoint(e, e === 'license' ? { state: 'failing', outcome: '500', lastPollAt: NOW - 600 } : {})) }, connectorError);
    memory.observe('eu', viewKeys(stackView(earlier, NOW - 590)), NOW - 590);
    // Now the license failed again (an older problem), and a merger became stale at the merger's newest poll.
    const now = stack(
      'eu',
      { endpoints: DATA_ENDPOINTS.map((e) => endpoint(e, e === 'license' ? { state: 'failing', outcome: '500', lastPollAt: NOW - 20 } : { lastPollAt: NOW - 20 })) },
      [...connectorError, { name: 'cmdb_merger_last_run_timestamp_seconds', labels: { merger: 'asset_merger' }, value: NOW - 30 * 3600 }],
    );
    const seen = memory.observe('eu', viewKeys(stackView(now, NOW - 10)), NOW - 10);
    const lines = Object.fromEntries(stackView({ ...now, seen }, NOW).lines.map((l) => [l.key, { since: l.since === undefined ? undefined : l.since - NOW, isNew: l.isNew }]));
    expect(lines).toEqual({
      'CmdbConnectorError:ldap/p': { since: -3600, isNew: false },
      'CmdbMergerStale:asset_merger': { since: -30 * 3600 + 26 * 3600, isNew: true },
      'CmdbEndpointDown:license': { since: -590, isNew: false },
    });
  });

  it('marks new what appeared since the viewer last looked, and keeps it new across polls until the viewer has been shown it (issue 37)', () => {
    // A connector failed at the connector poll of NOW - 300; the license expired at the license poll of NOW - 780.
    const connector = [...connectorError];
    const seen = new Map([
      ['CmdbConnectorError:ldap/p', NOW - 300],
      ['CmdbEndpointDown:license', NOW - 780],
    ]);
    const endpoints = DATA_ENDPOINTS.map((e) => endpoint(e, e === 'license' ? { state: 'failing', outcome: '500', lastPollAt: NOW - 780 } : { lastPollAt: NOW - 20 }));
    const view = (lastLook?: number) => Object.fromEntries(stackView({ ...stack('eu', { endpoints }, connector), seen }, NOW, lastLook).lines.map((l) => [l.key, l.isNew]));
    // A first look: what the newest poll of each endpoint brought. The connector has been polled
    // again since its failure appeared (NOW - 20), the license not (hourly): only the old line is new.
    expect(view()).toEqual({ 'CmdbConnectorError:ldap/p': false, 'CmdbEndpointDown:license': true });
    // The viewer looked at NOW - 600: the connector's failure came after that look, the license's before.
    expect(view(NOW - 600)).toEqual({ 'CmdbConnectorError:ldap/p': true, 'CmdbEndpointDown:license': false });
    // Once shown (the page of NOW - 100 had both), nothing is new any more.
    expect(view(NOW - 100)).toEqual({ 'CmdbConnectorError:ldap/p': false, 'CmdbEndpointDown:license': false });
  });

  it('forgets a problem that went away: when it comes back it is new again', () => {
    const memory = new ProblemMemory();
    memory.observe('eu', ['A:', 'B:'], 100);
    memory.observe('eu', ['A:'], 200);
    expect([...memory.observe('eu', ['A:', 'B:'], 300)]).toEqual([['A:', 100], ['B:', 300]]);
  });
});

describe('the status page', () => {
  const html = renderLanding({
    version: '1',
    ready: true,
    now: NOW,
    stacks: [stack('eu', { endpoints: failing('timeout', 200), requests: { failingSince: NOW - 150, failures: 9 } }, connectorError), stack('us')],
  });

  it('leads the stack with its cause: critical, since when, how old the data is, its lines folded under it', () => {
    const block = html.slice(html.indexOf('data-stack="eu"'), html.indexOf('</div>', html.indexOf('data-stack="eu"')));
    const first = block.indexOf('<li');
    expect(block.slice(first, first + 40)).toContain('<li class="critical cause">');
    expect(block).toContain('<b class="cause-title">CMDB unreachable</b>: none of the last 9 requests got an answer: each failed to connect or timed out.');
    expect(block).toContain('since <time datetime="2026-11-23T06:49:17Z" title="2026-11-23T06:49:17Z">06:49 UTC</time> (2m 30s)');
    expect(block).toContain('The data below is from 06:48 UTC (3m 20s old).');
    const n = DATA_ENDPOINTS.length;
    expect(block).toMatch(new RegExp(`<details><summary>${n} line\\(s\\) it explains</summary><ul>(<li class="warning">.*?</li>){${n}}</ul></details>`));
    expect(block).toContain('<a class="runbook" href="docs/alerts#cmdbunreachable"');
    // The connector's own problem is not explained by it: a line of its own, after the cause.
    expect(block.indexOf('ldap/p')).toBeGreaterThan(block.indexOf('</details>'));
  });

  it('says critical in colour wherever the state appears, and leaves the other stack as it was', () => {
    expect(html).toContain('<span class="state critical">critical</span>');
    expect(html).toContain('.state.critical{color:#cf222e}');
    expect(html).toMatch(/<tr class="critical"><td><a href="#stack-eu">eu<\/a><\/td><td class="state">critical<\/td><td>1<\/td>/);
    expect(html).toMatch(/<tr class="ok"><td><a href="#stack-us">us<\/a><\/td><td class="state">ok<\/td><td>0<\/td><td>0<\/td>/);
    expect(html).not.toContain('data-stack="us"');
  });

  it('lists critical stacks first in what needs attention', () => {
    const page = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [stack('calm', {}, connectorError), stack('eu', { endpoints: failing('timeout', 200), requests: { failingSince: NOW - 150, failures: 9 } })],
    });
    expect(page.indexOf('data-stack="eu"')).toBeGreaterThan(0);
    expect(page.indexOf('data-stack="eu"')).toBeLessThan(page.indexOf('data-stack="calm"'));
  });

  it('shows a refused saved query in what needs attention, and its reason in the stack\'s saved queries table', () => {
    const page = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [
        stack('eu', { queries: [{ name: 'quoted-number', table: 'asset', state: 'refused', ranAt: NOW - 60, next: 'current', reason: 'query "quoted-number": criterion [0][0] (High_CVE ==): "5" is a quoted number' }] }, [
          { name: 'cmdb_query_refused', labels: { query: 'quoted-number' }, value: 1 },
        ]),
      ],
    });
    const block = page.slice(page.indexOf('data-stack="eu"'), page.indexOf('</div>', page.indexOf('data-stack="eu"')));
    expect(block).toContain('<li class="warning"><span class="sev">warning</span> query <code>quoted-number</code>: refused, not sent: it does not fit the field metadata');
    expect(block).toContain('<a class="runbook" href="docs/alerts#cmdbqueryrefused"');
    const table = page.slice(page.indexOf('<table class="queries">'));
    expect(table).toMatch(/<tr class="failing"><td><code>quoted-number<\/code>.*refused: not sent, fix the query.*&#34;5&#34; is a quoted number/);
  });

  it('says when it was made, in UTC', () => {
    expect(html).toContain('<p id="made">Made at <time datetime="2026-11-23T06:51:47Z">2026-11-23 06:51:47 UTC</time>.</p>');
  });
});
