/** Response bodies: JSON, validated with the endpoint's tolerant schema (src/api/schemas.ts). */
import type { z } from 'zod';
import { CmdbInvalidBodyError } from '../errors.js';
import { validate } from '../api/schemas.js';
import type { Reply } from './attempt.js';

/**
 * A decoder for a 2xx body. The JSON parser's own message is not kept: it quotes the body, and a
 * body may hold credentials (docker_cmd, source_settings).
 */
export function jsonDecoder<T>(schema: z.ZodType<T>): (reply: Reply, request: string) => T {
  return (reply, request) => {
    let body: unknown;
    try {
      body = JSON.parse(reply.body.toString('utf8').replace(/^\uFEFF/, ''));
    } catch {
      throw new CmdbInvalidBodyError(request, '', `not JSON (${reply.body.length} bytes${contentType(reply)})`);
    }
    const result = validate(schema, body);
    if (!result.ok) throw new CmdbInvalidBodyError(request, result.field, result.message);
    return result.value;
  };
}

/** A media type such as `text/html`; anything else in the header is the server's text and is left out. */
const MEDIA_TYPE = /^[\w.+-]{1,64}\/[\w.+-]{1,64}$/;

function contentType(reply: Reply): string {
  const type = reply.headers['content-type'];
  const media = typeof type === 'string' ? (type.split(';')[0] ?? '').trim() : '';
  return MEDIA_TYPE.test(media) ? `, ${media}` : '';
}
