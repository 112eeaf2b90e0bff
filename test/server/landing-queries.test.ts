/** The saved queries on the status page: one row each, the reason of a refused or failing one, escaped. */
import { describe, expect, it } from 'vitest';
import { renderLanding } from '../../src/server/landing.js';
import type { QueryStatus } from '../../src/scheduler/query-poller.js';

const NOW = 1_795_416_707;

function page(queries: QueryStatus[]): string {
  return renderLanding({ version: '1', ready: true, now: NOW, stacks: [{ name: 'prod', baseUrl: 'https://cmdb.example.com', unauthorized: false, endpoints: [], queries }] });
}

describe('saved queries on the status page', () => {
  it('shows each query with its count, rebuild, last run, next run, and why one is refused', () => {
    const html = page([
      { name: 'servers-without-edr', table: 'asset', state: 'ok', records: 1234, rebuiltAt: NOW - 7200, ranAt: NOW - 3500, next: 'current' },
      {
        name: 'quoted',
        table: 'asset',
        state: 'refused',
        ranAt: NOW - 3500,
        next: 'current',
        reason: 'query "quoted": criterion [0][0] (High_CVE >=): "5" is a quoted number: the service answers 0 for a quoted number on an Integer field; write 5 without quotes',
      },
      { name: 'later', table: 'user', state: 'pending', next: 'waiting', reason: 'waiting for the first read of the connector history (its merger rows date the rebuilds)' },
    ]);
    expect(html).toContain('<h3>Saved queries');
    expect(html).toMatch(/<tr class="ok"><td><code>servers-without-edr<\/code><\/td><td>asset<\/td><td class="state">ok<\/td><td>1,234<\/td><td><span title="[^"]+">2h ago<\/span><\/td>/);
    expect(html).toContain('at the next rebuild (or a day after the last run)');
    expect(html).toMatch(/<tr class="failing"><td><code>quoted<\/code>.*refused: not sent, fix the query.*criterion \[0\]\[0\] \(High_CVE &#62;=\): &#34;5&#34; is a quoted number/);
    expect(html).toMatch(/<tr class="pending">.*after the first read of the connector history/);
  });

  it('escapes a hostile query name', () => {
    const html = page([{ name: '<script>alert(1)</script>', table: 'asset', state: 'ok', records: 1, next: 'current' }]);
    expect(html).not.toContain('<script>alert(1)');
    expect(html).toContain('&#60;script&#62;');
  });

  it('shows no table for a stack without saved queries', () => {
    expect(page([])).not.toContain('Saved queries');
  });
});
