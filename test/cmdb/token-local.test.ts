/**
 * Token endpoint answers the simulator never gives (it always answers correctly): odd success
 * shapes, rejections carried in the body, and a server that echoes the secret back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CmdbHttpError, CmdbTokenRejectedError } from '../../src/errors.js';
import { makeClient, rejection } from './helpers/client.js';
import { sendJson, startLocal, type LocalServer } from './helpers/server.js';
import { testStack } from './helpers/stack.js';

const SECRET = 'very-secret-value-123';
let server: LocalServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function withTokenAnswer(status: number, body: string) {
  server = await startLocal((req, res) => {
    if (req.url === '/CMDB/v1/access_token') {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
      return;
    }
    sendJson(res, 200, { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'ACME' });
  });
  return makeClient(
    testStack({
      baseUrl: server.url,
      auth: { kind: 'client', clientId: 'cid', secret: SECRET, clientIdKey: 'clientId' },
      retries: { max: 1 },
    }),
  );
}

describe('token fetch against odd token answers', () => {
  it('retries a 2xx that is not JSON (a body cut short) once per retry, then rejects it', async () => {
    const { client, metrics } = await withTokenAnswer(200, '<html>login</html>');
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTokenRejectedError);
    expect(err.message).toMatch(/token rejected: invalid response body: not JSON/);
    // retries.max 1: two requests for the configured key, two for the other spelling.
    expect(server?.seen).toHaveLength(4);
    expect(await metrics.outcomes('access_token')).toEqual({ invalid_body: 4 });
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'rejected' })).toBe(2);
  });

  it.each([
    ['code as a number', '{"code":200,"message":"success","data":{"token":"tok-aaaa"}}'],
    ['code as text', '{"code":"200","message":"success","data":{"token":"tok-aaaa"}}'],
  ])('accepts %s', async (_n, body) => {
    const { client, metrics } = await withTokenAnswer(200, body);
    await expect(client.get('license')).resolves.toMatchObject({ licenseType: 'FULL' });
    expect(server?.seen[1]?.headers.authorization).toBe('Bearer tok-aaaa');
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'success' })).toBe(1);
  });

  it('sends the configured client id key and the secret as JSON', async () => {
    const { client } = await withTokenAnswer(200, '{"code":200,"data":{"token":"tok-aaaa"}}');
    await client.get('license');
    const tokenRequest = server?.seen[0];
    expect(tokenRequest?.method).toBe('POST');
    expect(tokenRequest?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(tokenRequest?.body ?? '')).toEqual({ clientId: 'cid', secret: SECRET });
  });

  it.each([
    ['HTTP 200 with code 401', 200, '{"code":401,"message":"invalid credentials"}', /code 401, a message of 19 characters \(not shown\)/, '200'],
    ['code 200 without a token', 200, '{"code":200,"message":"success","data":{}}', /no data\.token/, '200'],
    ['an empty token', 200, '{"code":200,"message":"success","data":{"token":""}}', /no data\.token/, '200'],
    ['HTTP 401 with a message', 401, '{"code":401,"message":"bad secret"}', /401 Unauthorized, code 401, a message of 10 characters \(not shown\)/, '401'],
    ['HTTP 403 without a body', 403, '', /403 Forbidden, the response is not a token response/, '403'],
  ])('rejects %s with CmdbTokenRejectedError', async (_n, status, body, detail, outcome) => {
    const { client, metrics } = await withTokenAnswer(status, body);
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbTokenRejectedError);
    expect(err.message).toMatch(/^POST \/CMDB\/v1\/access_token: token rejected: /);
    expect(err.message).toMatch(detail);
    // The configured key (clientId) is refused, then the other spelling is tried once, and refused.
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'rejected' })).toBe(2);
    expect(await metrics.outcomes('access_token')).toEqual({ [outcome]: 2 });
    expect(JSON.parse(server?.seen[1]?.body ?? '')).toEqual({ clientID: 'cid', secret: SECRET });
    // A rejection is final: no retry, and the data request was never sent.
    expect(server?.seen).toHaveLength(2);
    // The other spelling is not tried again on the next fetch.
    await rejection(client.get('license'));
    expect(server?.seen).toHaveLength(3);
    expect(JSON.parse(server?.seen[2]?.body ?? '')).toEqual({ clientId: 'cid', secret: SECRET });
  });

  it('falls back from clientID to clientId once, and keeps the spelling that works', async () => {
    let issued = 0;
    server = await startLocal((req, res, raw) => {
      if (req.url === '/CMDB/v1/access_token') {
        const ok = (JSON.parse(raw) as Record<string, unknown>).clientId === 'cid';
        if (ok) issued++;
        sendJson(res, ok ? 200 : 401, ok ? { code: 200, data: { token: `tok-${issued}` } } : { code: 401001, message: 'Invalid token' });
        return;
      }
      // The first token expires at once: the renewal must use the spelling that worked.
      if (req.headers.authorization === 'Bearer tok-1') {
        sendJson(res, 401, { code: 401001, message: 'Invalid token' });
        return;
      }
      sendJson(res, 200, { licenseType: 'FULL', expireDate: '2030-01-01', customerName: 'ACME' });
    });
    const { client, metrics } = await makeClient(
      testStack({ baseUrl: server.url, auth: { kind: 'client', clientId: 'cid', secret: SECRET, clientIdKey: 'clientID' }, retries: { max: 1 } }),
    );
    await expect(client.get('license')).resolves.toMatchObject({ licenseType: 'FULL' });
    const tokenBodies = () => (server?.seen ?? []).filter((r) => r.url === '/CMDB/v1/access_token').map((r) => Object.keys(JSON.parse(r.body) as object)[0]);
    expect(tokenBodies()).toEqual(['clientID', 'clientId', 'clientId']);
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'rejected' })).toBe(1);
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'success' })).toBe(2);
  });

  it('never shows the server\'s message: it may echo the secret or hold other credentials', async () => {
    const words = 'wrong secret for svc-account password=Pa55-unregistered';
    const { client } = await withTokenAnswer(200, JSON.stringify({ code: 401, message: `${words} ${SECRET}` }));
    const err = await rejection(client.get('license'));
    expect(err.message).not.toContain(SECRET);
    // Text the scrubber cannot know (a credential that is not this stack's) is not shown either.
    expect(err.message).not.toContain('Pa55-unregistered');
    expect(err.message).not.toContain('wrong secret');
    expect(err.message).toMatch(/code 401, a message of \d+ characters \(not shown\)$/);
  });

  it('counts a 5xx that outlasts the retries as a token error, not a rejection', async () => {
    const { client, metrics } = await withTokenAnswer(503, '{"code":503}');
    const err = await rejection(client.get('license'));
    expect(err).toBeInstanceOf(CmdbHttpError);
    expect(err.message).toBe('POST /CMDB/v1/access_token: 503 Service Unavailable');
    expect(await metrics.value('cmdb_token_requests_total', { stack: 'test', outcome: 'error' })).toBe(1);
    expect(await metrics.outcomes('access_token')).toEqual({ '503': 2 });
  });
});
