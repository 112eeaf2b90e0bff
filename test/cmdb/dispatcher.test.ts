import { afterEach, describe, expect, it } from 'vitest';
import { Agent, EnvHttpProxyAgent, ProxyAgent, type Dispatcher } from 'undici';
import { createDispatcher, tlsConnectOptions } from '../../src/cmdb/dispatcher.js';
import { testStack } from './helpers/stack.js';

const made: Dispatcher[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((d) => d.close()));
});
function make(...args: Parameters<typeof createDispatcher>): Dispatcher {
  const d = createDispatcher(...args);
  made.push(d);
  return d;
}

describe('createDispatcher', () => {
  it.each([
    ['no proxy anywhere', {}, undefined, Agent],
    ['HTTPS_PROXY in env', { HTTPS_PROXY: 'http://127.0.0.1:3128' }, undefined, EnvHttpProxyAgent],
    ['https_proxy in env', { https_proxy: 'http://127.0.0.1:3128' }, undefined, EnvHttpProxyAgent],
    ['HTTP_PROXY in env', { HTTP_PROXY: 'http://127.0.0.1:3128' }, undefined, EnvHttpProxyAgent],
    ['http_proxy in env', { http_proxy: 'http://127.0.0.1:3128' }, undefined, EnvHttpProxyAgent],
    ['a blank proxy variable', { HTTPS_PROXY: '  ' }, undefined, Agent],
    ['only NO_PROXY', { NO_PROXY: 'localhost' }, undefined, Agent],
    ['explicit proxyUrl', {}, 'http://127.0.0.1:3128', ProxyAgent],
    ['explicit proxyUrl over env', { HTTPS_PROXY: 'http://127.0.0.1:9' }, 'http://127.0.0.1:3128', ProxyAgent],
  ])('with %s it builds the matching dispatcher', (_name, env, proxyUrl, kind) => {
    const d = make(testStack({ proxyUrl }), env);
    expect(d).toBeInstanceOf(kind);
  });
});

describe('tlsConnectOptions', () => {
  it('carries the PEM texts and the connect timeout, and verifies certificates by default', () => {
    const opts = tlsConnectOptions(
      testStack({ connectTimeoutSeconds: 3, tls: { ca: 'CA-PEM', cert: 'CERT-PEM', key: 'KEY-PEM' } }),
    );
    expect(opts).toEqual({ timeout: 3000, ca: 'CA-PEM', cert: 'CERT-PEM', key: 'KEY-PEM', rejectUnauthorized: true });
  });

  it('turns verification off only with insecureSkipVerify', () => {
    expect(tlsConnectOptions(testStack({ tls: { insecureSkipVerify: true } })).rejectUnauthorized).toBe(false);
  });
});
