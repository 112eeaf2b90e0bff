import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { parseListenAddress } from '../../src/config/load.js';

describe('parseListenAddress', () => {
  it.each([
    [':9873', { port: 9873 }],
    ['0.0.0.0:9873', { host: '0.0.0.0', port: 9873 }],
    ['127.0.0.1:0', { host: '127.0.0.1', port: 0 }],
    ['localhost:8080', { host: 'localhost', port: 8080 }],
    ['exporter.internal.example.com:65535', { host: 'exporter.internal.example.com', port: 65535 }],
    ['[::1]:9873', { host: '::1', port: 9873 }],
    ['[::]:9873', { host: '::', port: 9873 }],
  ])('reads %s', (value, expected) => {
    expect(parseListenAddress(value, 'listenAddress')).toEqual(expected);
  });

  it.each([
    ['9873', 'must be host:port, :port or [ipv6]:port'],
    ['', 'must be host:port, :port or [ipv6]:port'],
    [':', 'port from 0 to 65535'],
    [':65536', 'port from 0 to 65535'],
    [':-1', 'port from 0 to 65535'],
    [':http', 'port from 0 to 65535'],
    ['::1:9873', 'write an IPv6 address in brackets'],
    ['[localhost]:9873', 'is not an IPv6 address'],
    ['bad_host!:9873', 'is not a host name or IP address'],
  ])('rejects %j with a ConfigError at the given path', (value, fragment) => {
    let error: unknown;
    try {
      parseListenAddress(value, 'EXPORTER_LISTEN_ADDRESS');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const issue = (error as ConfigError).issues[0];
    expect(issue?.path).toBe('EXPORTER_LISTEN_ADDRESS');
    expect(issue?.message).toContain(fragment);
  });
});
