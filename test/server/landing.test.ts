import { describe, expect, it } from 'vitest';
import { DATA_ENDPOINTS } from '../../src/api/endpoints.js';
import type { Sample } from '../../src/metrics/sample.js';
import { escapeHtml } from '../../src/server/html.js';
import { connectorScanLine, lastLookOf, renderLanding, type LandingStack } from '../../src/server/landing.js';

const NOW = 1_795_416_707; // 2026-11-23T06:51:47Z

function healthyStack(name: string, extra: readonly Sample[] = []): LandingStack {
  return {
    name,
    baseUrl: `https://${name}.example.com`,
    unauthorized: false,
    endpoints: DATA_ENDPOINTS.map((endpoint) => ({
      endpoint,
      state: 'ok' as const,
      consecutiveFailures: 0,
      outcome: 'success' as const,
      lastPollAt: NOW - 20,
      lastSuccessAt: NOW - 20,
      lastDurationSeconds: 0.12,
      intervalSeconds: 300,
      nextPollAt: NOW + 280,
    })),
    samples: [
      { name: 'cmdb_license_expiry_timestamp_seconds', labels: { stack: name }, value: NOW + 200 * 86400 },
      { name: 'cmdb_ingestion_last_run_status', labels: { stack: name, status: 'success' }, value: 1 },
      { name: 'cmdb_ingestion_last_success_timestamp_seconds', labels: { stack: name }, value: NOW - 3600 },
      ...extra,
    ],
  };
}

describe('landing page', () => {
  it('escapes every dynamic value', () => {
    const html = renderLanding({
      version: '1.0.0',
      ready: false,
      now: 1000,
      stacks: [
        {
          name: '<script>alert(1)</script>',
          baseUrl: 'https://x/"onmouseover="y',
          unauthorized: true,
          endpoints: [
            { endpoint: 'license', state: 'failing', consecutiveFailures: 2, outcome: '500', error: '<img src=x onerror=alert(2)>', lastPollAt: 990, lastDurationSeconds: 0.5 },
            { endpoint: 'actions', state: 'forbidden', consecutiveFailures: 1, outcome: 'forbidden', retryAt: 1900 },
          ],
        },
      ],
    });
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('<img src=x');
    expect(html).not.toContain('"onmouseover="');
    expect(html).toContain('&#60;script&#62;');
    expect(html).toContain('pre-issued token is rejected');
    expect(html).toContain('forbidden: grant the permission or disable the endpoint');
    expect(html).toContain('Starting');
  });

  it('a stack a reload added shows as joining: named beside "Ready", its section saying it does not hold readiness back', () => {
    const joining: LandingStack = {
      name: 'acme<1>',
      baseUrl: 'https://acme.example.com',
      unauthorized: false,
      joining: true,
      endpoints: DATA_ENDPOINTS.map((endpoint) => ({ endpoint, state: 'pending' as const, consecutiveFailures: 0 })),
    };
    const html = renderLanding({ version: '1', ready: true, now: NOW, stacks: [healthyStack('prod'), joining] });
    const readiness = /<p id="readiness">(.*?)<\/p>/s.exec(html)?.[1] ?? '';
    expect(readiness).toContain('Ready:');
    expect(readiness).toContain('Added by a reload and pending their first polls (not holding readiness back): <code>acme&#60;1&#62;</code>.');
    const section = html.slice(html.indexOf('id="stack-acme&#60;1&#62;"'));
    expect(section).toContain('<p class="hint joining">Added by a reload: its first polls are running');
    expect(section).toContain('<tr class="pending">');
    const prod = html.slice(html.indexOf('id="stack-prod"'), html.indexOf('id="stack-acme'));
    expect(prod).not.toContain('joining');
    expect(renderLanding({ version: '1', ready: true, now: NOW, stacks: [healthyStack('prod')] })).not.toContain('Added by a reload');
  });

  it('says once, above the table, that a rejected token fails the whole stack', () => {
    const html = renderLanding({
      version: '1',
      ready: true,
      now: 0,
      stacks: [{ name: 's', baseUrl: 'http://x', unauthorized: false, endpoints: [{ endpoint: 'license', state: 'failing', consecutiveFailures: 1, outcome: 'rejected' }] }],
    });
    expect(html).toContain('every endpoint fails until they are fixed');
  });

  it.each([
    ['<', '&#60;'],
    ['>', '&#62;'],
    ['&', '&#38;'],
    ['"', '&#34;'],
    ["'", '&#39;'],
  ])('escapes %s as %s', (raw, escaped) => {
    expect(escapeHtml(raw)).toBe(escaped);
  });

  it('a forbidden endpoint whose next attempt is 14 minutes ahead reads "in 14m", never "from now"', () => {
    const html = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [
        {
          name: 's',
          baseUrl: 'http://x',
          unauthorized: false,
          endpoints: [{ endpoint: 'data_ingestion_next', state: 'forbidden', consecutiveFailures: 1, outcome: '403', retryAt: NOW + 14 * 60, lastPollAt: NOW - 60 }],
        },
      ],
    });
    expect(html).toContain('next attempt <time datetime="2026-11-23T07:05:47Z">2026-11-23T07:05:47Z</time> <span class="muted">(in 14m)</span>');
    expect(html).toContain('forbidden (403), next attempt in 14m');
    expect(html).not.toContain('from now');
    expect(html).toContain('>1m ago</span>');
  });

  it('shows interval, next scheduled poll and the last successful poll of a failing endpoint', () => {
    const html = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [
        {
          name: 's',
          baseUrl: 'http://x',
          unauthorized: false,
          endpoints: [
            { endpoint: 'license', state: 'failing', consecutiveFailures: 3, outcome: '503', lastPollAt: NOW - 10, lastSuccessAt: NOW - 2 * 3600, intervalSeconds: 3600, nextPollAt: NOW + 50 * 60 },
            { endpoint: 'actions', state: 'failing', consecutiveFailures: 1, outcome: 'timeout', lastPollAt: NOW - 10, intervalSeconds: 900 },
          ],
        },
      ],
    });
    const row = (e: string) => html.split('<tr').find((r) => r.includes(`<td><code>${e}</code>`)) ?? '';
    expect(row('license')).toContain('<td>1h</td>');
    expect(row('license')).toContain('>2h ago</span>');
    expect(row('license')).toContain('>in 50m</span>');
    expect(row('actions')).toContain('<td>15m</td>');
    expect(row('actions')).toContain('never');
  });

  it('lists disabled and untracked endpoints with the reason instead of leaving them out', () => {
    const html = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [
        {
          ...healthyStack('s'),
          endpoints: healthyStack('s').endpoints.filter((e) => !['data_ingestion_next', 'asset_change', 'user_change'].includes(e.endpoint)),
          skipped: [
            { endpoint: 'data_ingestion_next', reason: 'disabled' },
            { endpoint: 'asset_change', reason: 'untracked' },
            { endpoint: 'user_change', reason: 'untracked' },
          ],
        },
      ],
    });
    const rows = html.split('<tr').filter((r) => r.includes('<td><code>'));
    expect(rows).toHaveLength(DATA_ENDPOINTS.length);
    expect(rows.find((r) => r.includes('data_ingestion_next'))).toContain('disabled (disabledEndpoints)');
    expect(rows.find((r) => r.includes('asset_change'))).toContain('not polled: no tracked names');
  });

  it('puts what needs attention first, with names and statuses only, escaped', () => {
    const html = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [
        healthyStack('s', [
          { name: 'cmdb_connector_health', labels: { stack: 's', connector: '<b>bad</b>', profile: 'p', health: 'error' }, value: 1 },
          { name: 'cmdb_connector_info', labels: { stack: 's', connector: '<b>bad</b>', profile: 'p', display_name: 'FREE TEXT display' }, value: 1 },
          { name: 'cmdb_action_info', labels: { stack: 's', action_id: '42', action_name: '<i>Nightly</i> export' }, value: 1 },
          { name: 'cmdb_action_last_job_status', labels: { stack: 's', action_id: '42', status: 'FAILED' }, value: 1 },
          { name: 'cmdb_license_info', labels: { stack: 's', license_type: 'x', customer_name: 'FREE TEXT customer' }, value: 1 },
        ]),
      ],
    });
    const attention = html.indexOf('id="attention"');
    expect(attention).toBeGreaterThan(0);
    expect(attention).toBeLessThan(html.indexOf('<section class="stack"'));
    expect(html).toContain('connector <code>&#60;b&#62;bad&#60;/b&#62;/p</code>: newest run failed');
    // An Action by its name (escaped), its id on hover.
    expect(html).toContain('action <code title="Action id 42">&#60;i&#62;Nightly&#60;/i&#62; export</code>: newest job FAILED');
    expect(html).not.toContain('<i>Nightly');
    expect(html).not.toContain('<b>bad</b>');
    expect(html).not.toContain('FREE TEXT');
    // Its own refresh carries when it was made: the next page marks new what appeared after it.
    expect(html).toContain(`<meta http-equiv="refresh" content="30;url=?seen=${NOW * 1000}">`);
  });

  it('reads the viewer\'s previous look from its own refresh, and nothing else', () => {
    expect(lastLookOf(String(NOW * 1000 - 30_000), NOW)).toBe(NOW - 30);
    for (const bad of [undefined, '', 'x', '-5', '1e12', String((NOW + 60) * 1000), ['1', '2']]) expect(lastLookOf(bad, NOW)).toBeUndefined();
  });

  it('fills the details of every row: what a healthy endpoint serves, why a skipped one is not polled', () => {
    const stack = healthyStack('s');
    const html = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [
        {
          ...stack,
          endpoints: stack.endpoints.filter((e) => e.endpoint !== 'asset_change').map((e, i) => ({ ...e, series: 1000 + i })),
          skipped: [{ endpoint: 'asset_change', reason: 'untracked' }],
        },
      ],
    });
    const rows = html.split('<tr').filter((r) => r.includes('<td><code>'));
    expect(rows).toHaveLength(DATA_ENDPOINTS.length);
    for (const r of rows) expect(r).not.toContain('<td class="details"></td>');
    expect(rows.find((r) => r.includes('<code>metrics_data</code>'))).toContain('<td class="details"><span class="muted">1,000 series</span></td>');
    expect(rows.find((r) => r.includes('<code>asset_change</code>'))).toContain('name assets or users under track to poll it');
  });

  it('shows endpoints served from the state of the last stop as restored, with their age, until their first poll answers', () => {
    const stack = healthyStack('s');
    const endpoints = stack.endpoints.map((e) => (e.endpoint === 'license' || e.endpoint === 'connector' ? { ...e, restored: true, series: 12, lastPollAt: NOW - 312, lastSuccessAt: NOW - 312 } : { ...e, series: 3 }));
    const html = renderLanding({ version: '1', ready: true, now: NOW, stacks: [{ ...stack, endpoints }] });
    const license = html.split('<tr').find((r) => r.includes('<td><code>license</code>')) ?? '';
    expect(license).toMatch(/^ class="restored"><td><code>license<\/code><\/td><td class="state">restored, 5m 12s old<\/td>/);
    expect(license).toContain('12 series kept at the last stop (5m 12s old), served until its first poll since the restart answers');
    expect(html.split('<tr').find((r) => r.includes('<td><code>actions</code>'))).toMatch(/^ class="ok">.*<td class="state">ok<\/td>/);
    expect(html).toContain('<p class="hint restored-line">Restored: 2 endpoint(s) serve the series kept at the last stop (--storage.path), up to 5m 12s old, until their first poll since the restart answers.</p>');
    expect(renderLanding({ version: '1', ready: true, now: NOW, stacks: [stack] })).not.toMatch(/class="(restored|hint restored-line)"/);
  });

  it('with several stacks, a summary table with one row per stack comes first and links to each section', () => {
    const html = renderLanding({
      version: '1',
      ready: true,
      now: NOW,
      stacks: [healthyStack('a'), healthyStack('b', [{ name: 'cmdb_connector_health', labels: { stack: 'b', connector: 'ldap', profile: 'p', health: 'error' }, value: 1 }])],
    });
    expect(html.indexOf('id="summary"')).toBeLessThan(html.indexOf('id="attention"'));
    expect(html).toContain('<a href="#stack-a">a</a>');
    expect(html).toContain('id="stack-b"');
    expect(html).toContain('1 other stack(s): nothing needs attention');
    const single = renderLanding({ version: '1', ready: true, now: NOW, stacks: [healthyStack('a')] });
    expect(single).not.toContain('id="summary"');
    expect(single).toContain('Nothing needs attention');
  });

  it('renders 200 stacks, some with problems, into a page of reasonable size', () => {
    const stacks = Array.from({ length: 200 }, (_, i) =>
      healthyStack(
        `stack-${String(i).padStart(3, '0')}`,
        i % 10 === 0 ? [{ name: 'cmdb_connector_health', labels: { stack: 'x', connector: 'ldap', profile: 'p', health: 'error' }, value: 1 }] : [],
      ),
    );
    const html = renderLanding({ version: '1', ready: true, now: NOW, stacks });
    expect(html.match(/<tr class="[a-z]+"><td><a href="#stack-/g)).toHaveLength(200);
    expect(html.match(/class="stack-attention"/g)).toHaveLength(20);
    expect(html).toContain('180 other stack(s): nothing needs attention');
    // About 5 KB per stack of 12 endpoints before compression (the server gzips it when asked).
    expect(html.length).toBeLessThan(1_100_000);
  });

  it('shows the Action job-fetch backlog of a stack that polls Action jobs, and nothing otherwise', () => {
    const page = (jobBacklog?: number) =>
      renderLanding({ version: '1', ready: true, now: NOW, stacks: [{ ...healthyStack('a'), ...(jobBacklog === undefined ? {} : { jobBacklog }) }] });
    expect(page(42)).toContain('Action job fetches waiting: <b class="backlog">42</b>');
    expect(page()).not.toContain('Action job fetches waiting');
  });

  it('says what to do: a runbook link per problem, "polling now" while a poll runs, a rejected reload at the top', () => {
    const stack = healthyStack('s', [{ name: 'cmdb_connector_health', labels: { stack: 's', connector: 'ldap', profile: 'p', health: 'error' }, value: 1 }]);
    const polling = { ...stack, endpoints: stack.endpoints.map((e) => (e.endpoint === 'license' ? { ...e, pollingSince: NOW - 3 } : e)) };
    const html = renderLanding({ version: '1', ready: true, now: NOW, stacks: [polling], rejectedReload: { at: NOW - 120, message: 'stacks[0].baseURL: unknown key; did you mean "baseUrl"?' } });
    // By default the runbooks the exporter serves itself; runbookBaseUrl moves them.
    expect(html).toMatch(/newest run failed.*<a class="runbook" href="docs\/alerts#cmdbconnectorerror" title="CmdbConnectorError">what to do<\/a>/);
    const wiki = renderLanding({ version: '1', ready: true, now: NOW, stacks: [stack], runbookBase: 'https://wiki.example.com/cmdb' });
    expect(wiki).toContain('<a class="runbook" href="https://wiki.example.com/cmdb#cmdbconnectorerror"');
    const row = (e: string) => html.split('<tr').find((r) => r.includes(`<td><code>${e}</code>`)) ?? '';
    expect(row('license')).toContain('>polling now</span>');
    expect(row('license')).not.toContain('in 4m 40s');
    expect(row('metrics_data')).toContain('>in 4m 40s</span>');
    const banner = html.indexOf('id="reload-rejected"');
    expect(banner).toBeGreaterThan(0);
    expect(banner).toBeLessThan(html.indexOf('id="attention"'));
    expect(html).toContain('stacks[0].baseURL: unknown key; did you mean &#34;baseUrl&#34;?');
    expect(renderLanding({ version: '1', ready: true, now: NOW, stacks: [stack] })).not.toContain('reload-rejected');
  });

  it('stacks the endpoint table on a narrow screen, each value under its column name', () => {
    const html = renderLanding({ version: '1', ready: true, now: NOW, stacks: [healthyStack('s')] });
    expect(html).toContain('@media (max-width:40rem)');
    expect(html).toContain('table.endpoints td:nth-child(7)::before{content:"next poll"}');
  });
});

describe('landing page: the poll plan', () => {
  it('warns under the stack when its poll plan needs more than its budget, and says what to change', () => {
    const stack = { ...healthyStack('busy'), demand: { perHour: 4_210, budgetPerHour: 3_000, ratio: 4_210 / 3_000 } };
    const html = renderLanding({ version: 't', ready: true, now: NOW, stacks: [stack] });
    expect(html).toMatch(/<p class="err demand">Poll plan above the budget: 4,210 requests an hour of a budget of 3,000 \(140 %\)\..*raise rateLimitPerMinute/);
  });

  it('shows a plan that fits as a quiet line, and nothing without a plan', () => {
    const fits = { ...healthyStack('calm'), demand: { perHour: 1_423, budgetPerHour: 3_000, ratio: 1_423 / 3_000 } };
    const html = renderLanding({ version: 't', ready: true, now: NOW, stacks: [fits, healthyStack('none')] });
    expect(html).toContain('<p class="hint demand">Poll plan: 1,423 requests an hour of a budget of 3,000 (47 %).</p>');
    expect(html.match(/class="[a-z ]*demand"/g)).toHaveLength(1);
  });
});

describe('connector scan line (issue 21)', () => {
  const now = 1_800_000_000;

  it('shows a running full scan: pages read of the total, bytes and time so far', () => {
    const html = connectorScanLine(now, { progress: { kind: 'full', startedAt: now - 95, pagesRead: 3, pagesTotal: 10, bytes: 74e6, pageSize: 2000 } });
    expect(html).toContain('full scan running: page 3 of 10 read (2000 rows a page), 74 MB, 1m 35s so far');
  });

  it('shows the last scan once it ended, and until when incremental reads are off', () => {
    const html = connectorScanLine(now, {
      progress: { kind: 'full', startedAt: now - 400, pagesRead: 10, pagesTotal: 10, bytes: 99e6, pageSize: 1000, endedAt: now - 100 },
      incrementalOffUntil: now + 3600,
    });
    expect(html).toContain('last full scan: 10 page(s), 99 MB in 5m, ended 1m 40s ago');
    expect(html).toMatch(/incremental reads off until <time datetime="2027-01-15T09:00:00Z">/);
  });

  it('says nothing without a scan', () => {
    expect(connectorScanLine(now, undefined)).toBe('');
    expect(connectorScanLine(now, {})).toBe('');
  });
});
