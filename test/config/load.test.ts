import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_USER_AGENT } from '../../src/version.js';
import { DEFAULT_INTERVALS } from '../../src/config/types.js';
import { configWarnings } from '../../src/config/load.js';
import { issuesOf, loadYaml, Scratch, stackYaml } from './helpers.js';

const scratch = new Scratch();
afterAll(() => scratch.remove());

const one = (extra = ''): string => `stacks:\n  - ${stackYaml(extra)}\n`;

describe('precedence: command line > environment > file > defaults', () => {
  // Each source differs from the one below it, so every row proves one step of the order.
  const FLAGS = { listenAddress: ':3333', logLevel: 'error', logFormat: 'pretty' };
  const ENV = { EXPORTER_LISTEN_ADDRESS: ':2222', LOG_LEVEL: 'warn', LOG_FORMAT: 'json' };
  const FILE = 'listenAddress: ":1111"\nlogLevel: debug\nlogFormat: pretty\n';

  it.each([
    ['command line', FILE, ENV, FLAGS, FLAGS],
    ['environment', FILE, ENV, {}, { listenAddress: ':2222', logLevel: 'warn', logFormat: 'json' }],
    ['file', FILE, {}, {}, { listenAddress: ':1111', logLevel: 'debug', logFormat: 'pretty' }],
    ['defaults', '', {}, {}, { listenAddress: ':9873', logLevel: 'info', logFormat: 'json' }],
  ])('the %s wins when it is the highest source set', (_source, file, env, overrides, expected) => {
    const config = loadYaml(scratch, file + one(), env, { overrides });
    expect({ listenAddress: config.listenAddress, logLevel: config.logLevel, logFormat: config.logFormat }).toEqual(expected);
  });

  it('ignores overrides that are undefined', () => {
    const config = loadYaml(scratch, one(), { LOG_LEVEL: 'warn' }, { overrides: { logLevel: undefined } });
    expect(config.logLevel).toBe('warn');
  });
});

describe('defaults', () => {
  it('applies every built-in default to a minimal stack', () => {
    const config = loadYaml(scratch, one());
    expect(config).toEqual({
      listenAddress: ':9873',
      logLevel: 'info',
      logFormat: 'json',
      enableReload: false,
      configFile: expect.stringMatching(/exporter\.yaml$/),
      stacks: [
        {
          name: 'prod',
          baseUrl: 'https://cmdb.example.com',
          auth: { kind: 'token', token: 'tok-prod-1234' },
          userAgent: DEFAULT_USER_AGENT,
          rateLimitPerMinute: 50,
          maxConcurrency: 4,
          actionJobsPerMinute: 30,
          backfillRequestsPerMinute: 15,
          queriesPerMinute: 20,
          timeoutSeconds: 30,
          connectTimeoutSeconds: 10,
          retries: { max: 3, minDelaySeconds: 0.5, maxDelaySeconds: 30, maxRetryAfterSeconds: 120 },
          maxResponseBytes: 268435456,
          tls: { insecureSkipVerify: false },
          paging: { connectorPageSize: 2000, actionPageSize: 100, maxPages: 100 },
          connectorFullScanInterval: 86400,
          track: { assets: [], users: [] },
          queries: [],
          intervals: DEFAULT_INTERVALS,
          staleIntervals: 3,
          forbiddenBackoffSeconds: 900,
          forbiddenBackoffMaxSeconds: 14400,
          timezone: 'UTC',
          disabledEndpoints: [],
          maxSeries: 20000,
        },
      ],
    });
  });

  it('merges `defaults` under each stack: nested mappings key by key, lists and scalars replaced', () => {
    const yaml = [
      'defaults:',
      '  timezone: Europe/Berlin',
      '  retries: { max: 5 }',
      '  intervals: { changes: 30m }',
      '  track: { assets: [a, b], users: [u] }',
      '  disabledEndpoints: [license]',
      'stacks:',
      `  - ${stackYaml('retries: { minDelaySeconds: 1 }, intervals: { inventory: 10m }, track: { assets: [c] }, timezone: UTC', 'one')}`,
      `  - ${stackYaml('disabledEndpoints: []', 'two')}`,
    ].join('\n');
    const [first, second] = loadYaml(scratch, yaml).stacks;
    expect(first?.retries).toEqual({ max: 5, minDelaySeconds: 1, maxDelaySeconds: 30, maxRetryAfterSeconds: 120 });
    expect(first?.intervals).toEqual({ ...DEFAULT_INTERVALS, changes: 1800, inventory: 600 });
    expect(first?.track).toEqual({ assets: ['c'], users: ['u'] });
    expect(first?.timezone).toBe('UTC');
    expect(first?.disabledEndpoints).toEqual(['license']);
    expect(second?.retries).toEqual({ max: 5, minDelaySeconds: 0.5, maxDelaySeconds: 30, maxRetryAfterSeconds: 120 });
    expect(second?.intervals).toEqual({ ...DEFAULT_INTERVALS, changes: 1800 });
    expect(second?.track).toEqual({ assets: ['a', 'b'], users: ['u'] });
    expect(second?.timezone).toBe('Europe/Berlin');
    expect(second?.disabledEndpoints).toEqual([]);
  });

  it('treats a key with no value as not set', () => {
    const config = loadYaml(scratch, `logLevel:\ndefaults:\n  timezone:\n${one('proxyUrl: ~')}`);
    expect(config.logLevel).toBe('info');
    expect(config.stacks[0]?.timezone).toBe('UTC');
    expect(config.stacks[0]).not.toHaveProperty('proxyUrl');
  });

  it('reads durations, sizes, numbers and booleans in every accepted form', () => {
    const config = loadYaml(
      scratch,
      one('timeoutSeconds: 1m, connectTimeoutSeconds: "500ms", maxResponseBytes: "64 MiB", maxConcurrency: "8", ' +
        'tls: { insecureSkipVerify: "true" }, intervals: { license: 86400, ingestion: "30" }, connectorSort: "display_name,desc", ' +
        'proxyUrl: "http://proxy.example.com:3128", timezone: europe/berlin'),
    );
    expect(config.stacks[0]).toMatchObject({
      timeoutSeconds: 60,
      connectTimeoutSeconds: 0.5,
      maxResponseBytes: 64 * 1024 * 1024,
      maxConcurrency: 8,
      tls: { insecureSkipVerify: true },
      intervals: { license: 86400, ingestion: 30 },
      connectorSort: 'display_name,desc',
      proxyUrl: 'http://proxy.example.com:3128',
      timezone: 'Europe/Berlin',
    });
  });
});

describe('poll intervals', () => {
  it('accepts every interval that divides a day, such as 90s, 45s and 45m, which no cron step says', () => {
    const config = loadYaml(scratch, one('intervals: { ingestion: 90s, inventory: 45s, changes: 45m, license: 2h24m }'));
    expect(config.stacks[0]?.intervals).toMatchObject({ ingestion: 90, inventory: 45, changes: 2700, license: 8640 });
  });
});

describe('baseUrl normalisation', () => {
  it.each([
    ['https://cmdb.example.com', 'https://cmdb.example.com'],
    ['https://cmdb.example.com/', 'https://cmdb.example.com'],
    ['https://cmdb.example.com/CMDB', 'https://cmdb.example.com'],
    ['https://cmdb.example.com/CMDB/', 'https://cmdb.example.com'],
    ['https://cmdb.example.com/tenant-a/CMDB//', 'https://cmdb.example.com/tenant-a'],
    ['https://cmdb.example.com/cmdb', 'https://cmdb.example.com/cmdb'],
    ['HTTPS://CMDB.Example.COM:443/', 'https://cmdb.example.com'],
    ['http://10.0.0.7:8080/CMDB', 'http://10.0.0.7:8080'],
    ['http://[::1]:8080/', 'http://[::1]:8080'],
    ['  https://cmdb.example.com  ', 'https://cmdb.example.com'],
  ])('%j → %j', (input, expected) => {
    const config = loadYaml(scratch, `stacks:\n  - { name: p, baseUrl: ${JSON.stringify(input)}, token: abcd }\n`);
    expect(config.stacks[0]?.baseUrl).toBe(expected);
  });
});

describe('${VAR} expansion', () => {
  it.each([
    ['${TZ_NAME}', { TZ_NAME: 'Asia/Tokyo' }, 'Asia/Tokyo'],
    ['${TZ_NAME:-Europe/Paris}', {}, 'Europe/Paris'],
    ['${TZ_NAME:-Europe/Paris}', { TZ_NAME: '' }, 'Europe/Paris'],
    ['${TZ_NAME:-Europe/Paris}', { TZ_NAME: 'Asia/Tokyo' }, 'Asia/Tokyo'],
    ['${AREA}/${CITY}', { AREA: 'America', CITY: 'New_York' }, 'America/New_York'],
  ])('%s with %j gives %s', (value, env, expected) => {
    expect(loadYaml(scratch, one(`timezone: "${value}"`), env).stacks[0]?.timezone).toBe(expected);
  });

  it.each([
    ['$${HOME}', '${HOME}'],
    ['cost $$5 and $HOME', 'cost $$5 and $HOME'],
    ['a$${b}c${X:-d}', 'a${b}cd'],
  ])('%s is kept literally as %s', (value, expected) => {
    expect(loadYaml(scratch, one(`track: { assets: ["${value}"] }`), { HOME: '/root' }).stacks[0]?.track.assets).toEqual([expected]);
  });

  it('turns expanded text into numbers and booleans where the key needs them', () => {
    const config = loadYaml(scratch, one('rateLimitPerMinute: "${RATE}", tls: { insecureSkipVerify: "${INSECURE:-false}" }'), { RATE: '30' });
    expect(config.stacks[0]).toMatchObject({ rateLimitPerMinute: 30, tls: { insecureSkipVerify: false } });
  });

  it('cannot inject YAML: a value with a line break and a colon stays one string', () => {
    const config = loadYaml(scratch, one('track: { assets: ["${NAME}"] }'), { NAME: 'web-01\nlogLevel: debug' });
    expect(config.stacks[0]?.track.assets).toEqual(['web-01\nlogLevel: debug']);
    expect(config.logLevel).toBe('info');
  });

  it('expands inside lists and nested mappings', () => {
    const config = loadYaml(scratch, 'defaults:\n  track:\n    users: ["${U1}", "${U2:-bob}"]\n' + one(), { U1: 'alice' });
    expect(config.stacks[0]?.track.users).toEqual(['alice', 'bob']);
  });
});

describe('files named by the configuration', () => {
  const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n';
  const PEM_KEY = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n';

  it('reads secretFile relative to the config file, trimming only the trailing line break', () => {
    scratch.file('secrets/prod', '  spaced secret  \r\n');
    const config = loadYaml(scratch, `stacks:\n  - { name: p, baseUrl: "https://x.example.com", clientId: c, secretFile: secrets/prod }\n`);
    expect(config.stacks[0]?.auth).toEqual({ kind: 'client', clientId: 'c', secret: '  spaced secret  ', clientIdKey: 'clientID' });
  });

  it('keeps the absolute tokenFile path so that the token can be re-read', () => {
    const tokenFile = scratch.file('secrets/token', 'tok-from-file\n');
    const config = loadYaml(scratch, `stacks:\n  - { name: p, baseUrl: "https://x.example.com", tokenFile: secrets/token }\n`);
    expect(config.stacks[0]?.auth).toEqual({ kind: 'token', token: 'tok-from-file', tokenFile });
  });

  it('loads CA, client certificate and key as PEM text, also from defaults', () => {
    scratch.file('tls/ca.pem', PEM_CERT);
    scratch.file('tls/client.pem', PEM_CERT);
    scratch.file('tls/client-key.pem', PEM_KEY);
    const yaml = `defaults:\n  tls: { caFile: tls/ca.pem }\n${one('tls: { certFile: tls/client.pem, keyFile: tls/client-key.pem }')}`;
    expect(loadYaml(scratch, yaml).stacks[0]?.tls).toEqual({ ca: PEM_CERT, cert: PEM_CERT, key: PEM_KEY, insecureSkipVerify: false });
  });

  it('refuses a secret file too large to be a secret', () => {
    const big = scratch.file('big', 'x'.repeat(70 * 1024));
    const issues = issuesOf(() => loadYaml(scratch, `stacks:\n  - { name: p, baseUrl: "https://x.example.com", clientId: c, secretFile: "${big}" }\n`));
    expect(issues).toEqual([{ path: 'stacks[0].secretFile', message: expect.stringContaining('is larger than 64 KiB') }]);
  });

  it('reads nothing beyond the cap from an endless file', () => {
    const issues = issuesOf(() => loadYaml(scratch, `stacks:\n  - { name: p, baseUrl: "https://x.example.com", tokenFile: /dev/zero }\n`));
    expect(issues).toEqual([{ path: 'stacks[0].tokenFile', message: expect.stringContaining('is larger than') }]);
  });
});

describe('the reload switch', () => {
  it.each([
    ['enableReload: true', true],
    ['enableReload: false', false],
    ['', false],
  ])('%j gives enableReload %s', (line, expected) => {
    expect(loadYaml(scratch, `${line}\n${one()}`).enableReload).toBe(expected);
  });
});

describe('YAML merge keys', () => {
  it('merges `<<: *anchor` into a stack', () => {
    const config = loadYaml(
      scratch,
      [
        'stacks:',
        '  - &first { name: a, baseUrl: "https://a.example.com", token: abcd, timezone: Asia/Tokyo, maxSeries: 500 }',
        '  - { <<: *first, name: b }',
      ].join('\n'),
    );
    expect(config.stacks[1]).toMatchObject({ name: 'b', baseUrl: 'https://a.example.com', timezone: 'Asia/Tokyo', maxSeries: 500 });
  });

  // Found by the config property test (test/property/config.test.ts): a RangeError before.
  it.each(['a: &a [*a]\n', 'stacks: &s\n  - { name: a, more: *s }\n'])('refuses an alias that contains itself: %j', (yaml) => {
    expect(issuesOf(() => loadYaml(scratch, yaml))).toEqual([
      { path: expect.stringContaining('exporter.yaml'), message: expect.stringContaining('an alias refers to a node that contains it') },
    ]);
  });
});

describe('configWarnings', () => {
  it.each([
    [60, []],
    [61, [{ stack: 'prod', key: 'rateLimitPerMinute', message: expect.stringContaining('above the 60 requests a minute') }]],
  ])('rateLimitPerMinute %d gives %j', (rate, expected) => {
    expect(configWarnings(loadYaml(scratch, one(`rateLimitPerMinute: ${rate}`))).filter((w) => w.key === 'rateLimitPerMinute')).toEqual(expected);
  });

  it.each([
    ['https://cmdb.example.com', 'example.com'],
    ['https://CMDB-EU.Example.org/CMDB/', 'example.org'],
    ['http://example.net:8080', 'example.net'],
  ])('a baseUrl on a documentation host (%s) is warned of: a copied example, no CMDB', (url, domain) => {
    const config = loadYaml(scratch, `stacks:\n  - { name: prod, baseUrl: "${url}", token: tok-prod-1234 }\n`);
    expect(configWarnings(config)).toEqual([
      { stack: 'prod', key: 'baseUrl', message: `baseUrl ${config.stacks[0]?.baseUrl ?? ''} is an example address (${domain} is reserved for documentation): no CMDB answers there; set your CMDB's address` },
    ]);
  });

  it.each(['https://cmdb.corp.local', 'https://example.com.evil.net', 'https://myexample.com', 'http://127.0.0.1:8080'])('a baseUrl on another host (%s) is not', (url) => {
    expect(configWarnings(loadYaml(scratch, `stacks:\n  - { name: prod, baseUrl: "${url}", token: tok-prod-1234 }\n`))).toEqual([]);
  });
});

describe('saved queries', () => {
  const scratch = new Scratch();
  afterAll(() => scratch.remove());

  it('are refused at load where they can be told wrong without the CMDB, at the key of the criterion', () => {
    const queries = `queries: [{ name: recent, table: asset, query: [[{ searchFieldName: Last_Discovered_Datetime, operator: "within past", type: Datetime, value: "30 days" }]] }]`;
    const issues = issuesOf(() => loadYaml(scratch, `stacks:\n  - ${stackYaml(queries)}\n`));
    expect(issues).toEqual([
      { path: 'stacks[0].queries[0].query[0][0].operator', message: expect.stringMatching(/operator "within past" is refused.*write the absolute form: operator ">=" with a relative value such as "-30d"/) },
    ]);
  });

  it('under defaults apply to every stack; a stack\'s own list replaces them', () => {
    const q = (name: string) => `{ name: ${name}, table: user, query: [[{ searchFieldName: Risk_Score, operator: ">=", value: 80 }]] }`;
    const config = loadYaml(scratch, `defaults:\n  queries: [${q('shared')}]\nstacks:\n  - ${stackYaml('', 'a')}\n  - ${stackYaml(`queries: [${q('own')}]`, 'b')}\n`);
    expect(config.stacks.map((s) => s.queries.map((x) => x.name))).toEqual([['shared'], ['own']]);
  });
});
