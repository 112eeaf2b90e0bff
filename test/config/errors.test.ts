import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { configErrorOf, issuesOf, loadYaml, Scratch, stackYaml } from './helpers.js';

const scratch = new Scratch();
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n';

beforeAll(() => {
  scratch.file('empty-secret', '\n');
  scratch.file('not-a-cert.pem', 'hello\n');
  scratch.file('ca.pem', PEM_CERT);
  mkdirSync(join(scratch.dir, 'a-directory'));
});
afterAll(() => scratch.remove());

const one = (extra: string): string => `stacks:\n  - ${stackYaml(extra)}\n`;
const bare = (keys: string): string => `stacks:\n  - { name: prod, baseUrl: "https://cmdb.example.com", ${keys} }\n`;

// [what, yaml, path, message fragment]. ${DIR} is the scratch directory (expanded from the env).
const CASES: ReadonlyArray<readonly [string, string, string, string]> = [
  ['unknown stack key, with a suggestion', `stacks:\n  - { name: p, baseURL: "https://x.example.com", token: abcd }`, 'stacks[0].baseURL', 'unknown key; did you mean "baseUrl"?'],
  ['unknown top-level key, with a suggestion', `logLevl: info\n${one('')}`, 'logLevl', 'did you mean "logLevel"?'],
  ['unknown nested key, with a suggestion', one('retries: { maxx: 3 }'), 'stacks[0].retries.maxx', 'did you mean "max"?'],
  ['unknown snake_case key', one('rate_limit_per_minute: 10'), 'stacks[0].rate_limit_per_minute', 'did you mean "rateLimitPerMinute"?'],
  ['unknown key far from any known key', `frobnicate: 1\n${one('')}`, 'frobnicate', 'unknown key'],
  ['per-stack key at the top level', `timezone: UTC\n${one('')}`, 'timezone', 'per-stack keys go in a stack under "stacks"'],
  ['credentials under defaults', `defaults: { token: abcd }\n${one('')}`, 'defaults.token', 'not allowed under defaults'],
  ['baseUrl with another scheme', `stacks:\n  - { name: p, baseUrl: "ftp://x", token: abcd }`, 'stacks[0].baseUrl', 'must be an http(s) URL, got "ftp://x"'],
  ['baseUrl that is no URL', `stacks:\n  - { name: p, baseUrl: "cmdb.example.com", token: abcd }`, 'stacks[0].baseUrl', 'must be an http(s) URL'],
  ['baseUrl with credentials', `stacks:\n  - { name: p, baseUrl: "https://u:pw@x.example.com", token: abcd }`, 'stacks[0].baseUrl', 'must not contain credentials'],
  ['baseUrl with a query', `stacks:\n  - { name: p, baseUrl: "https://x.example.com/?a=1", token: abcd }`, 'stacks[0].baseUrl', 'must not have a query or fragment'],
  ['missing baseUrl', `stacks:\n  - { name: p, token: abcd }`, 'stacks[0].baseUrl', 'is required'],
  ['missing name', `stacks:\n  - { baseUrl: "https://x.example.com", token: abcd }`, 'stacks[0].name', 'is required'],
  ['bad stack name', `stacks:\n  - { name: "my stack", baseUrl: "https://x.example.com", token: abcd }`, 'stacks[0].name', 'must start with a letter or digit and contain only letters, digits and _ . : -'],
  ['duplicate stack names', `stacks:\n  - ${stackYaml('', 'prod')}\n  - ${stackYaml('', 'eu')}\n  - ${stackYaml('', 'prod')}\n`, 'stacks[2].name', 'duplicate stack name "prod", also used by stacks[0]'],
  ['client and token credentials', bare('clientId: c, secret: s3cr3t, token: abcd'), 'stacks[0].token', 'set either clientId with secret or secretFile, or token or tokenFile, not both'],
  ['no credentials', bare('timezone: UTC'), 'stacks[0]', 'no credentials: set clientId with secret or secretFile, or set token or tokenFile'],
  ['secret and secretFile', bare('clientId: c, secret: s3cr3t, secretFile: /x'), 'stacks[0].secretFile', 'set only one of secret and secretFile'],
  ['token and tokenFile', bare('token: abcd, tokenFile: /x'), 'stacks[0].tokenFile', 'set only one of token and tokenFile'],
  ['clientId without a secret', bare('clientId: c'), 'stacks[0].secret', 'clientId needs a secret: set secret or secretFile'],
  ['secret without a clientId', bare('secret: s3cr3t'), 'stacks[0].clientId', 'is required when secret or secretFile is set'],
  ['unreadable secretFile', bare('clientId: c, secretFile: "${DIR}/missing"'), 'stacks[0].secretFile', 'missing": ENOENT'],
  ['secretFile that is a directory', bare('clientId: c, secretFile: "${DIR}/a-directory"'), 'stacks[0].secretFile', 'EISDIR'],
  ['empty secretFile', bare('clientId: c, secretFile: "${DIR}/empty-secret"'), 'stacks[0].secretFile', 'empty-secret" is empty'],
  ['unreadable tokenFile', bare('tokenFile: "${DIR}/missing"'), 'stacks[0].tokenFile', 'ENOENT'],
  ['unset ${VAR}', bare('token: "${CMDB_TOKEN_EU}"'), 'stacks[0].token', 'environment variable CMDB_TOKEN_EU is not set'],
  ['unterminated ${', one('timezone: "${TZ"'), 'stacks[0].timezone', 'unterminated "${"'],
  ['invalid ${...} reference', one('timezone: "${1TZ}"'), 'stacks[0].timezone', 'invalid reference'],
  ['malformed duration', one('intervals: { license: soon }'), 'stacks[0].intervals.license', 'must be a duration such as "30s", "5m", "1h", "1d" or a number of seconds, got "soon"'],
  ['interval not dividing a day', one('intervals: { inventory: 7m }'), 'stacks[0].intervals.inventory', 'must divide a day evenly (each poll falls at the same times every day), got 7m; the nearest valid intervals are 6m40s or 7m12s'],
  ['interval not dividing a day, in defaults', `defaults: { intervals: { changes: 5h } }\n${one('')}`, 'defaults.intervals.changes', 'got 5h; the nearest valid intervals are 4h48m or 6h'],
  ['interval above a day', one('intervals: { license: 2d }'), 'stacks[0].intervals.license', 'must be at most 1d, got 2d'],
  ['interval below 10s', one('intervals: { ingestion: 5s }'), 'stacks[0].intervals.ingestion', 'must be at least 10s'],
  ['unknown time zone', one('timezone: Mars/Olympus_Mons'), 'stacks[0].timezone', 'must be an IANA time zone such as "UTC" or "Europe/Berlin", got "Mars/Olympus_Mons"'],
  ['unknown disabled endpoint', one('disabledEndpoints: [license, licence]'), 'stacks[0].disabledEndpoints[1]', 'unknown endpoint "licence" (did you mean "license"?); valid names: metrics_data, license, connector'],
  ['rate limit of 0', one('rateLimitPerMinute: 0'), 'stacks[0].rateLimitPerMinute', 'must be a whole number from 1 to 6000, got 0'],
  ['rate limit above 6000', one('rateLimitPerMinute: 6001'), 'stacks[0].rateLimitPerMinute', 'from 1 to 6000, got 6001'],
  ['fractional count', one('maxConcurrency: 1.5'), 'stacks[0].maxConcurrency', 'must be a whole number from 1 to 64, got 1.5'],
  ['infinite number', one('maxSeries: .inf'), 'stacks[0].maxSeries', 'from 1 to 10000000, got Infinity'],
  ['not a number', one('staleIntervals: many'), 'stacks[0].staleIntervals', 'must be a whole number from 1 to 100, got "many"'],
  ['negative timeout', one('timeoutSeconds: -1'), 'stacks[0].timeoutSeconds', 'must be a duration from 100ms to 1h'],
  ['too many retries', one('retries: { max: 11 }'), 'stacks[0].retries.max', 'from 0 to 10, got 11'],
  ['page size 0', one('paging: { connectorPageSize: 0 }'), 'stacks[0].paging.connectorPageSize', 'from 1 to 10000, got 0'],
  ['response cap too small', one('maxResponseBytes: 10'), 'stacks[0].maxResponseBytes', 'must be a size from 1KiB to 2GiB'],
  ['response cap with an unknown unit', one('maxResponseBytes: 5 parsecs'), 'stacks[0].maxResponseBytes', 'got "5 parsecs"'],
  ['backoff beyond its range', one('forbiddenBackoffMaxSeconds: 8d'), 'stacks[0].forbiddenBackoffMaxSeconds', 'from 1s to 7d'],
  ['listen address without a colon', `listenAddress: "9873"\n${one('')}`, 'listenAddress', 'must be host:port, :port or [ipv6]:port, got "9873"'],
  ['unknown log level', `logLevel: verbose\n${one('')}`, 'logLevel', 'must be one of fatal, error, warn, info, debug, trace, silent, got "verbose"'],
  ['unknown log format', `logFormat: xml\n${one('')}`, 'logFormat', 'must be one of json, pretty, got "xml"'],
  ['boolean written as yes', `enableReload: yes\n${one('')}`, 'enableReload', 'must be true or false (or 1 or 0), got "yes"'],
  ['stacks that is not a list', 'stacks: { name: prod }', 'stacks', 'must be a list of stacks'],
  ['empty stacks list', 'stacks: []', 'stacks', 'must list at least one stack'],
  ['stack that is not a mapping', 'stacks: [prod]', 'stacks[0]', 'must be a mapping with name, baseUrl and credentials'],
  ['section that is not a mapping', one('retries: 5'), 'stacks[0].retries', 'must be a mapping (key: value), got 5'],
  ['defaults that is not a mapping', `defaults: [1]\n${one('')}`, 'defaults', 'must be a mapping (key: value), got a list'],
  ['number where a string is expected', bare('clientId: 12345, secret: s3cr3t'), 'stacks[0].clientId', 'must be a string, got 12345 (quote it in YAML)'],
  ['tracked name that is a number', one('track: { assets: [web-01, 42] }'), 'stacks[0].track.assets[1]', 'must be a string, got 42'],
  ['token with a space', bare('token: "abc def"'), 'stacks[0].token', 'must not contain spaces, line breaks or control characters'],
  ['user agent with a line break', one('userAgent: "a\\nX-Injected: 1"'), 'stacks[0].userAgent', 'must not contain line breaks'],
  ['clientIdKey spelled otherwise', one('clientIdKey: client_id'), 'stacks[0].clientIdKey', 'must be clientID or clientId'],
  ['connectorSort without a direction', one('connectorSort: display_name'), 'stacks[0].connectorSort', 'must be "field,asc" or "field,desc"'],
  ['proxyUrl with another scheme', one('proxyUrl: "socks5://proxy:1080"'), 'stacks[0].proxyUrl', 'must be an http(s) URL, got "socks5://proxy:1080"'],
  ['certFile without keyFile', one('tls: { certFile: "${DIR}/ca.pem" }'), 'stacks[0].tls.certFile', 'needs tls.keyFile as well'],
  ['caFile that is no PEM', one('tls: { caFile: "${DIR}/not-a-cert.pem" }'), 'stacks[0].tls.caFile', 'does not hold a PEM certificate'],
  ['keyFile that is no private key', one('tls: { certFile: "${DIR}/ca.pem", keyFile: "${DIR}/ca.pem" }'), 'stacks[0].tls.keyFile', 'does not hold a PEM private key'],
  ['unreadable caFile under defaults', `defaults: { tls: { caFile: "\${DIR}/missing.pem" } }\n${one('')}`, 'defaults.tls.caFile', 'ENOENT'],
  ['connect timeout above the total timeout', one('timeoutSeconds: 5s'), 'stacks[0].timeoutSeconds', 'must be at least connectTimeoutSeconds (10s), got 5s'],
  ['timeout under defaults below the connect timeout', `defaults: { timeoutSeconds: 5 }\n${one('')}`, 'defaults.timeoutSeconds', 'must be at least connectTimeoutSeconds'],
  ['retry delays the wrong way round', one('retries: { minDelaySeconds: 40, maxDelaySeconds: 20 }'), 'stacks[0].retries.maxDelaySeconds', 'must be at least retries.minDelaySeconds (40s), got 20s'],
  ['first backoff above the default maximum', one('forbiddenBackoffSeconds: 1d'), 'stacks[0].forbiddenBackoffSeconds', 'must not exceed forbiddenBackoffMaxSeconds (4h), got 1d'],
];

describe('configuration errors', () => {
  it.each(CASES)('%s: reported at %s', (_what, yaml, path, fragment) => {
    const issues = issuesOf(() => loadYaml(scratch, yaml, { DIR: scratch.dir }));
    expect(issues).toContainEqual({ path: path, message: expect.stringContaining(fragment) });
    for (const issue of issues) {
      expect(issue.message).not.toMatch(/Invalid input|\n\s+at /);
    }
  });

  it('names the file and the line and column of a YAML syntax error', () => {
    const file = scratch.file('broken.yaml', 'logLevel: info\nstacks:\n  - name: prod\n    baseUrl: [unclosed\n');
    const issues = issuesOf(() => loadConfig({ configFile: file, env: {} }));
    expect(issues).toEqual([{ path: file, message: expect.stringMatching(/^invalid YAML at line \d+, column \d+: /) }]);
  });

  it('reports a repeated YAML key with its line', () => {
    const file = scratch.file('dup.yaml', 'logLevel: info\nlogLevel: debug\n');
    const issues = issuesOf(() => loadConfig({ configFile: file, env: {} }));
    expect(issues[0]?.path).toBe(file);
    expect(issues[0]?.message).toMatch(/^invalid YAML at line 2, column 1: .*unique/);
  });

  it('names a config file that cannot be read, with the OS error code', () => {
    const file = join(scratch.dir, 'nope.yaml');
    expect(issuesOf(() => loadConfig({ configFile: file, env: {} }))).toEqual([
      { path: file, message: 'cannot read the config file: ENOENT' },
    ]);
  });

  it('rejects a file whose top level is not a mapping', () => {
    const file = scratch.file('list.yaml', '- a\n- b\n');
    expect(issuesOf(() => loadConfig({ configFile: file, env: {} }))[0]?.message).toContain('must hold a mapping of settings');
  });

  it('says that no CMDB is configured when neither the file nor the environment declares a stack', () => {
    const issues = issuesOf(() => loadYaml(scratch, 'logLevel: info\n'));
    expect(issues).toEqual([
      { path: 'stacks', message: expect.stringContaining('no CMDB configured; set CMDB_BASE_URL with credentials, or declare `stacks`') },
    ]);
    expect(issuesOf(() => loadConfig({ env: {} }))[0]?.message).toContain('no CMDB configured');
  });

  it('refuses stacks from both the file and CMDB_BASE_URL', () => {
    const issues = issuesOf(() => loadYaml(scratch, one(''), { CMDB_BASE_URL: 'https://x.example.com', CMDB_TOKEN: 'abcd' }));
    expect(issues).toContainEqual({ path: 'CMDB_BASE_URL', message: expect.stringContaining('either in the file or with CMDB_* variables, not both') });
  });

  it('reports every problem at once, across sections and stacks', () => {
    const yaml = [
      'logLevel: loud',
      'defaults: { intervals: { license: 7m } }',
      'stacks:',
      '  - { name: a, baseUrl: "ftp://a", token: abcd }',
      '  - { name: b, baseUrl: "https://b.example.com", clientId: c }',
      '  - { name: c, baseUrl: "https://c.example.com", token: "${MISSING_TOKEN}", timezone: Nowhere/Here }',
    ].join('\n');
    const err = configErrorOf(() => loadYaml(scratch, yaml, {}, { overrides: { logFormat: 'xml' } }));
    expect(err.issues.map((i) => i.path)).toEqual(
      expect.arrayContaining([
        'logLevel',
        'defaults.intervals.license',
        'stacks[0].baseUrl',
        'stacks[1].secret',
        'stacks[2].token',
        'stacks[2].timezone',
        '--log.format',
      ]),
    );
    expect(err.issues).toHaveLength(7);
    expect(err.code).toBe('CONFIG_INVALID');
    expect(err.message).toMatch(/^invalid configuration \(7 problems\):\n/);
    expect(err.message).toContain('\n  logLevel: must be one of fatal, error');
  });

  it('reports an unset ${VAR} once, not again as a bad value of the key', () => {
    const issues = issuesOf(() => loadYaml(scratch, `stacks:\n  - { name: p, baseUrl: "\${BASE}", token: abcd }`));
    expect(issues).toEqual([{ path: 'stacks[0].baseUrl', message: expect.stringContaining('BASE is not set') }]);
  });
});

describe('secrets in error messages', () => {
  const SECRET = 'Sup3r-S3cret-Value';

  it.each([
    ['a secret with a space in a token', bare(`token: "${SECRET} x"`), {}],
    ['a secret in the baseUrl credentials', `stacks:\n  - { name: p, baseUrl: "https://user:${SECRET}@x.example.com", token: abcd }`, {}],
    ['a secret used by mistake in a quoted key', bare('clientId: c, secret: "${SEC}", timezone: "${SEC}"'), { SEC: SECRET }],
    ['a secret put into the stack name', bare('token: "${SEC}", name2: x').replace('name: prod', 'name: "${SEC}!"'), { SEC: SECRET }],
    ['a secret from the environment in a bad URL', `stacks:\n  - { name: p, baseUrl: "\${CMDB_SECRET}", token: abcd }`, { CMDB_SECRET: SECRET }],
  ])('never quotes %s', (_what, yaml, env) => {
    const err = configErrorOf(() => loadYaml(scratch, yaml, env));
    expect(err.message).not.toContain(SECRET);
    expect(err.message).not.toContain(encodeURIComponent(SECRET));
    expect(err.issues.length).toBeGreaterThan(0);
  });

  it('never quotes a secret given as a number', () => {
    const err = configErrorOf(() => loadYaml(scratch, bare('clientId: c, secret: 987654321')));
    expect(err.issues).toContainEqual({ path: 'stacks[0].secret', message: 'must be a string, got a number (quote it in YAML)' });
    expect(err.message).not.toContain('987654321');
  });

  it('never quotes the content of a token file', () => {
    const file = scratch.file('bad-token', `${SECRET} with spaces\n`);
    const err = configErrorOf(() => loadYaml(scratch, bare(`tokenFile: "${file}"`)));
    expect(err.issues).toContainEqual({ path: 'stacks[0].tokenFile', message: expect.stringContaining('must not contain spaces') });
    expect(err.message).not.toContain(SECRET);
  });

  it('never quotes CMDB_TOKEN or CMDB_SECRET', () => {
    const err = configErrorOf(() =>
      loadConfig({ env: { CMDB_BASE_URL: 'https://x.example.com', CMDB_TOKEN: `${SECRET} x`, CMDB_SECRET: SECRET } }),
    );
    expect(err.message).not.toContain(SECRET);
  });
});
