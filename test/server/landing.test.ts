import { describe, expect, it } from 'vitest';
import { escapeHtml, renderLanding } from '../../src/server/landing.js';

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
});
