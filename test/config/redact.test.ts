import { afterAll, describe, expect, it } from 'vitest';
import { redactConfig, secretsOf } from '../../src/config/load.js';
import { SecretScrubber } from '../../src/secrets.js';
import { loadYaml, Scratch } from './helpers.js';

const scratch = new Scratch();
afterAll(() => scratch.remove());

const CLIENT_SECRET = 'client-secret-0001';
const TOKEN = 'bearer-token-0002';
const FILE_TOKEN = 'file-token-0003';
const PROXY_PASSWORD = 'proxy-pass-0004';
const KEY_BODY = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASCKEYBODY';
const PEM_CERT = '-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n';
const PEM_KEY = `-----BEGIN PRIVATE KEY-----\n${KEY_BODY}\n-----END PRIVATE KEY-----\n`;

function loadWithSecrets() {
  scratch.file('cert.pem', PEM_CERT);
  scratch.file('key.pem', PEM_KEY);
  const tokenFile = scratch.file('token', `${FILE_TOKEN}\n`);
  const yaml = [
    'stacks:',
    '  - { name: a, baseUrl: "https://a.example.com", clientId: exporter, secret: "${SECRET}",',
    `      proxyUrl: "http://monitor:${PROXY_PASSWORD}@proxy.example.com:3128", tls: { certFile: cert.pem, keyFile: key.pem } }`,
    '  - { name: b, baseUrl: "https://b.example.com", token: "${TOKEN}" }',
    `  - { name: c, baseUrl: "https://c.example.com", tokenFile: "${tokenFile}" }`,
  ].join('\n');
  return { config: loadYaml(scratch, yaml, { SECRET: CLIENT_SECRET, TOKEN }), tokenFile };
}

describe('redactConfig', () => {
  it('replaces every secret and token by [REDACTED] and keeps file paths', () => {
    const { config, tokenFile } = loadWithSecrets();
    const text = JSON.stringify(redactConfig(config));
    for (const secret of [CLIENT_SECRET, TOKEN, FILE_TOKEN, PROXY_PASSWORD, KEY_BODY]) expect(text).not.toContain(secret);
    const [a, b, c] = (redactConfig(config) as { stacks: Array<Record<string, unknown>> }).stacks;
    expect(a?.auth).toEqual({ kind: 'client', clientId: 'exporter', secret: '[REDACTED]', clientIdKey: 'clientID' });
    expect(a?.proxyUrl).toBe('http://monitor:[REDACTED]@proxy.example.com:3128');
    expect(a?.tls).toEqual({ cert: expect.stringMatching(/^\[PEM, 1 certificate, \d+ bytes\]$/), key: '[REDACTED]', insecureSkipVerify: false });
    expect(b?.auth).toEqual({ kind: 'token', token: '[REDACTED]' });
    expect(c?.auth).toEqual({ kind: 'token', token: '[REDACTED]', tokenFile });
    expect(a?.baseUrl).toBe('https://a.example.com');
  });

  it('leaves the configuration itself untouched', () => {
    const { config } = loadWithSecrets();
    redactConfig(config);
    expect(config.stacks[0]?.auth).toMatchObject({ secret: CLIENT_SECRET });
    expect(config.stacks[1]?.auth).toMatchObject({ token: TOKEN });
  });
});

describe('secretsOf', () => {
  it('lists every secret value, so that the scrubber removes each from a log line', () => {
    const { config } = loadWithSecrets();
    const secrets = secretsOf(config);
    expect(secrets).toEqual(expect.arrayContaining([CLIENT_SECRET, TOKEN, FILE_TOKEN, PROXY_PASSWORD, PEM_KEY]));
    const scrubber = new SecretScrubber();
    for (const s of secrets) scrubber.add(s);
    const line = `auth ${CLIENT_SECRET} ${TOKEN} ${FILE_TOKEN} proxy ${PROXY_PASSWORD}`;
    expect(scrubber.scrub(line)).toBe('auth [REDACTED] [REDACTED] [REDACTED] proxy [REDACTED]');
  });
});
