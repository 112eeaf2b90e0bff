import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { issuesOf, loadYaml, Scratch } from './helpers.js';

const scratch = new Scratch();
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n';
let caFile = '';
let secretFile = '';
let tokenFile = '';

beforeAll(() => {
  caFile = scratch.file('ca.pem', PEM_CERT);
  secretFile = scratch.file('secret', 'file-secret-value\n');
  tokenFile = scratch.file('token', 'file-token-value\r\n');
});
afterAll(() => scratch.remove());

const BASE = { CMDB_BASE_URL: 'https://cmdb.example.com/CMDB/' };

describe('a single stack from the environment', () => {
  it('reads every CMDB_* variable and the global ones', () => {
    const config = loadConfig({
      env: {
        ...BASE,
        CMDB_CLIENT_ID: 'exporter',
        CMDB_SECRET: 'env-secret-value',
        CMDB_STACK: 'lab',
        CMDB_TRACK_ASSETS: ' web-01, db-01,,web-01 , ',
        CMDB_TRACK_USERS: 'alice',
        CMDB_CLIENT_ID_KEY: 'clientId',
        CMDB_CA_FILE: caFile,
        CMDB_INSECURE_SKIP_VERIFY: 'true',
        CMDB_RATE_LIMIT_PER_MINUTE: '30',
        CMDB_TIMEZONE: 'Europe/Berlin',
        CMDB_USER_AGENT: 'acme-monitoring/1.0',
        EXPORTER_LISTEN_ADDRESS: '127.0.0.1:9999',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'pretty',
      },
    });
    expect(config).toMatchObject({ listenAddress: '127.0.0.1:9999', logLevel: 'debug', logFormat: 'pretty', enableReload: false });
    expect(config.configFile).toBeUndefined();
    expect(config.stacks).toHaveLength(1);
    expect(config.stacks[0]).toMatchObject({
      name: 'lab',
      baseUrl: 'https://cmdb.example.com',
      auth: { kind: 'client', clientId: 'exporter', secret: 'env-secret-value', clientIdKey: 'clientId' },
      track: { assets: ['web-01', 'db-01'], users: ['alice'] },
      tls: { ca: PEM_CERT, insecureSkipVerify: true },
      rateLimitPerMinute: 30,
      timezone: 'Europe/Berlin',
      userAgent: 'acme-monitoring/1.0',
    });
  });

  it('names the stack "default" when CMDB_STACK is not set', () => {
    const config = loadConfig({ env: { ...BASE, CMDB_TOKEN: 'env-token-value' } });
    expect(config.stacks[0]?.name).toBe('default');
    expect(config.stacks[0]?.auth).toEqual({ kind: 'token', token: 'env-token-value' });
  });

  it('reads the secret from CMDB_SECRET_FILE without its trailing newline', () => {
    const config = loadConfig({ env: { ...BASE, CMDB_CLIENT_ID: 'exporter', CMDB_SECRET_FILE: secretFile } });
    expect(config.stacks[0]?.auth).toEqual({ kind: 'client', clientId: 'exporter', secret: 'file-secret-value', clientIdKey: 'clientID' });
  });

  it('reads the token from CMDB_TOKEN_FILE and keeps the file for re-reading', () => {
    const config = loadConfig({ env: { ...BASE, CMDB_TOKEN_FILE: tokenFile } });
    expect(config.stacks[0]?.auth).toEqual({ kind: 'token', token: 'file-token-value', tokenFile });
  });

  it('treats a variable set to the empty string as unset', () => {
    const config = loadConfig({ env: { ...BASE, CMDB_TOKEN: 'env-token-value', CMDB_CLIENT_ID: '', CMDB_SECRET: ' ', LOG_LEVEL: '' } });
    expect(config.stacks[0]?.auth.kind).toBe('token');
    expect(config.logLevel).toBe('info');
  });

  it('reads the config file named by EXPORTER_CONFIG when no file is passed', () => {
    const file = scratch.file('from-env.yaml', 'logLevel: warn\n');
    const config = loadConfig({ env: { ...BASE, CMDB_TOKEN: 'env-token-value', EXPORTER_CONFIG: file } });
    expect(config.logLevel).toBe('warn');
    expect(config.configFile).toBe(file);
  });

  it('applies the file\'s defaults under the environment stack, whose own variables win', () => {
    const config = loadYaml(scratch, 'defaults: { rateLimitPerMinute: 20, timezone: Asia/Tokyo, intervals: { inventory: 10m } }\n', {
      ...BASE,
      CMDB_TOKEN: 'env-token-value',
      CMDB_RATE_LIMIT_PER_MINUTE: '40',
    });
    expect(config.stacks[0]).toMatchObject({ rateLimitPerMinute: 40, timezone: 'Asia/Tokyo' });
    expect(config.stacks[0]?.intervals.inventory).toBe(600);
  });

  it.each([
    [{ CMDB_BASE_URL: 'ftp://cmdb', CMDB_TOKEN: 'abcd' }, 'CMDB_BASE_URL', 'must be an http(s) URL, got "ftp://cmdb"'],
    [{ ...BASE }, 'CMDB_BASE_URL', 'no credentials: set CMDB_CLIENT_ID with CMDB_SECRET or CMDB_SECRET_FILE, or set CMDB_TOKEN or CMDB_TOKEN_FILE'],
    [{ ...BASE, CMDB_CLIENT_ID: 'c' }, 'CMDB_SECRET', 'CMDB_CLIENT_ID needs a secret: set CMDB_SECRET or CMDB_SECRET_FILE'],
    [{ ...BASE, CMDB_SECRET: 's3cr3t' }, 'CMDB_CLIENT_ID', 'is required when CMDB_SECRET or CMDB_SECRET_FILE is set'],
    [{ ...BASE, CMDB_CLIENT_ID: 'c', CMDB_SECRET: 's3cr3t', CMDB_TOKEN: 'abcd' }, 'CMDB_TOKEN', 'not both'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_TOKEN_FILE: '/x' }, 'CMDB_TOKEN_FILE', 'set only one of CMDB_TOKEN and CMDB_TOKEN_FILE'],
    [{ ...BASE, CMDB_CLIENT_ID: 'c', CMDB_SECRET_FILE: '/nonexistent/secret' }, 'CMDB_SECRET_FILE', '"/nonexistent/secret": ENOENT'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_STACK: 'my lab' }, 'CMDB_STACK', 'must start with a letter or digit'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_RATE_LIMIT_PER_MINUTE: 'fast' }, 'CMDB_RATE_LIMIT_PER_MINUTE', 'must be a whole number from 1 to 6000, got "fast"'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_INSECURE_SKIP_VERIFY: 'maybe' }, 'CMDB_INSECURE_SKIP_VERIFY', 'must be true or false (or 1 or 0), got "maybe"'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_TIMEZONE: 'CEST' }, 'CMDB_TIMEZONE', 'must be an IANA time zone'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_CLIENT_ID_KEY: 'id' }, 'CMDB_CLIENT_ID_KEY', 'must be clientID or clientId'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_USER_AGENT: 'a\r\nb' }, 'CMDB_USER_AGENT', 'must not contain line breaks'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', CMDB_CA_FILE: '/nonexistent/ca.pem' }, 'CMDB_CA_FILE', 'ENOENT'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', LOG_LEVEL: 'loud' }, 'LOG_LEVEL', 'must be one of fatal, error, warn, info, debug, trace, silent, got "loud"'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', LOG_FORMAT: 'xml' }, 'LOG_FORMAT', 'must be one of json, pretty'],
    [{ ...BASE, CMDB_TOKEN: 'abcd', EXPORTER_LISTEN_ADDRESS: 'localhost' }, 'EXPORTER_LISTEN_ADDRESS', 'must be host:port, :port or [ipv6]:port'],
  ])('reports a bad environment under the variable\'s name (%j)', (env, path, fragment) => {
    expect(issuesOf(() => loadConfig({ env }))).toContainEqual({ path, message: expect.stringContaining(fragment) });
  });

  it('reports a cross-field problem caused by the file\'s defaults at the defaults key', () => {
    const issues = issuesOf(() => loadYaml(scratch, 'defaults: { timeoutSeconds: 5 }\n', { ...BASE, CMDB_TOKEN: 'abcd' }));
    expect(issues).toEqual([{ path: 'defaults.timeoutSeconds', message: 'must be at least connectTimeoutSeconds (10s), got 5s' }]);
  });
});
