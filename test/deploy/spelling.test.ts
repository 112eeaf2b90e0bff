/** The spelling rules of values.schema.json (scripts/helm/spelling.ts); Helm itself: helm-values.test.ts. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spellingPattern, withSpellingHints } from '../../scripts/helm/spelling.js';
import { CHART } from './helm.js';

describe('spellingPattern', () => {
  it.each([
    ['baseUrl', ['baseUrl', 'baseURL', 'BaseUrl', 'base_url', 'base-url', 'BASEURL'], ['baseUri', 'baseUrls', 'base__url', 'url']],
    ['insecureSkipVerify', ['insecure_skip_verify', 'InsecureSkipVerify'], ['insecureVerify']],
    ['basic_auth_users', ['basicAuthUsers', 'basic-auth-users', 'basic_auth_users'], ['basic_auth']],
    ['tls', ['TLS', 'Tls'], ['tlsx']],
  ])('%s takes its other spellings and nothing else', (key, same, other) => {
    const re = new RegExp(spellingPattern(key), 'u');
    for (const s of same) expect(re.test(s), s).toBe(true);
    for (const s of other) expect(re.test(s), s).toBe(false);
  });
});

describe('withSpellingHints', () => {
  it('gives a closed mapping one rule per spelling; two keys of one spelling both stay valid; open mappings get none', () => {
    const schema = withSpellingHints({
      type: 'object',
      properties: { clientId: {}, clientID: {}, name: {}, open: { type: 'object', additionalProperties: { type: 'string' } } },
      additionalProperties: false,
    });
    expect(schema.propertyNames).toEqual({
      allOf: [
        { if: { pattern: spellingPattern('clientId') }, then: { enum: ['clientId', 'clientID'] } },
        { if: { pattern: spellingPattern('name') }, then: { const: 'name' } },
        { if: { pattern: spellingPattern('open') }, then: { const: 'open' } },
      ],
    });
    expect((schema.properties as Record<string, Record<string, unknown>>).open?.propertyNames).toBeUndefined();
  });

  it('every pattern of the chart\'s values.schema.json is a JavaScript regular expression too (editors validate values files with it)', () => {
    const patterns = [...readFileSync(join(CHART, 'values.schema.json'), 'utf8').matchAll(/"if":\{"pattern":("(?:[^"\\]|\\.)*")\}/g)].map((m) => JSON.parse(m[1] ?? '""') as string);
    expect(patterns.length).toBeGreaterThan(150);
    for (const p of patterns) expect(() => new RegExp(p, 'u'), p).not.toThrow();
  });
});
