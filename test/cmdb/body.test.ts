import { describe, expect, it } from 'vitest';
import { jsonDecoder } from '../../src/cmdb/body.js';
import { ConnectorPageSchema, MetricsRecordSchema } from '../../src/api/schemas.js';
import { CmdbInvalidBodyError } from '../../src/errors.js';
import type { Reply } from '../../src/cmdb/attempt.js';

const reply = (text: string): Reply => ({
  status: 200,
  statusText: 'OK',
  headers: { 'content-type': 'application/json; charset=utf-8' },
  body: Buffer.from(text),
});
const REQ = 'GET /CMDB/v2/system/metrics/data';
type Decode = (reply: Reply, request: string) => unknown;

function failure(fn: () => unknown): CmdbInvalidBodyError {
  try {
    fn();
  } catch (err) {
    if (err instanceof CmdbInvalidBodyError) return err;
    throw err;
  }
  throw new Error('expected CmdbInvalidBodyError');
}

describe('jsonDecoder', () => {
  it('returns the validated record', () => {
    expect(jsonDecoder(MetricsRecordSchema)(reply('{"assetCount":"12","userCount":3}'), REQ)).toMatchObject({
      assetCount: 12,
      userCount: 3,
    });
  });

  it('accepts a UTF-8 byte order mark', () => {
    expect(jsonDecoder(MetricsRecordSchema)(reply('\uFEFF{"assetCount":1,"userCount":2}'), REQ).assetCount).toBe(1);
  });

  it.each([
    ['not JSON', '<html>oops sim-db-password-7Hq2</html>', ''],
    ['truncated JSON', '{"assetCount": 1, "userCo', ''],
    ['an empty body', '', ''],
  ])('%s → invalid_body with field "" and no body text in the message', (_n, text, field) => {
    const err = failure(() => jsonDecoder(MetricsRecordSchema)(reply(text), REQ));
    expect(err.field).toBe(field);
    expect(err.outcome).toBe('invalid_body');
    expect(err.message).toMatch(/^GET \/CMDB\/v2\/system\/metrics\/data: invalid response body: not JSON/);
    expect(err.message).not.toContain('sim-db-password');
  });

  it('reads a body nested 100,000 deep: the deep value is absent, the rest is read (issue 11 #7)', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const page = jsonDecoder(ConnectorPageSchema)(reply(`{"content":[{"bridge_name":"a","output_fields":[${deep}],"status":${deep}}]}`), REQ);
    expect(page.content[0]?.bridge_name).toBe('a');
    expect(page.content[0]?.status).toBeUndefined();
    expect(() => JSON.stringify(page)).not.toThrow();
  });

  it('names the field and the type of a wrong-typed value, never the value (issue 11 #6)', () => {
    const err = failure(() => jsonDecoder(MetricsRecordSchema)(reply('{"assetCount":"db-pass=Hunter2-xyz","userCount":1}'), REQ));
    expect(err.field).toBe('assetCount');
    expect(err.message).toBe(`${REQ}: invalid response body: assetCount: expected a number, got a text (19 characters)`);
    const list = failure(() => jsonDecoder(MetricsRecordSchema)(reply('{"assetCount":["Hunter2-xyz"],"userCount":1}'), REQ));
    expect(list.message).toMatch(/assetCount: expected a number, got a list$/);
  });

  it('shows a content type only when it is a plain media type', () => {
    const odd: Reply = { ...reply('<html>'), headers: { 'content-type': 'text/html password=Hunter2-xyz; charset=utf-8' } };
    const err = failure(() => jsonDecoder(MetricsRecordSchema)(odd, REQ));
    expect(err.message).toBe(`${REQ}: invalid response body: not JSON (6 bytes)`);
    const html: Reply = { ...reply('<html>'), headers: { 'content-type': 'text/html; charset=utf-8' } };
    expect(failure(() => jsonDecoder(MetricsRecordSchema)(html, REQ)).message).toMatch(/not JSON \(6 bytes, text\/html\)$/);
  });

  const metrics: Decode = jsonDecoder(MetricsRecordSchema);
  const connector: Decode = jsonDecoder(ConnectorPageSchema);
  it.each([
    ['a missing required field', metrics, '{"userCount":1}', 'assetCount'],
    ['a row without its identity field', connector, '{"content":[{"bridge_name":"a"},{"display_name":"x"}]}', 'content[1].bridge_name'],
    ['an object where a list belongs', connector, '{"content":{"bridge_name":"a"}}', 'content'],
  ])('%s is invalid_body naming the field path', (_n, decode, text, field) => {
    const err = failure(() => decode(reply(text), REQ));
    expect(err.field).toBe(field);
    expect(err.message).toContain(`${field}: `);
  });
});
