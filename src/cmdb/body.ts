/** Response bodies: JSON, validated with the endpoint's tolerant schema (src/api/schemas.ts). */
import type { z } from 'zod';
import type { EndpointName } from '../api/endpoints.js';
import { CmdbInvalidBodyError } from '../errors.js';
import { capDepth } from '../api/depth.js';
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
      body = capDepth(JSON.parse(reply.body.toString('utf8').replace(/^\uFEFF/, '')) as unknown);
    } catch {
      throw new CmdbInvalidBodyError(request, '', `not JSON (${reply.body.length} bytes${contentType(reply)})`, { notJson: true });
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

/** Endpoints that answer one small record: refused past RECORD_MAX_BYTES, not maxResponseBytes (docs/design.md, "Response size caps"). */
const RECORD_ENDPOINTS: ReadonlySet<EndpointName> = new Set<EndpointName>(['access_token', 'metrics_data', 'license', 'data_ingestion_next']);
export const RECORD_MAX_BYTES = 1024 * 1024;

export interface BodyCap {
  readonly bytes: number;
  /** Named in the too_large message. */
  readonly name: string;
}

/** The most an answer of `endpoint` may hold: maxResponseBytes, or less for a single record. */
export function bodyCap(endpoint: EndpointName, maxResponseBytes: number): BodyCap {
  return RECORD_ENDPOINTS.has(endpoint) && RECORD_MAX_BYTES < maxResponseBytes
    ? { bytes: RECORD_MAX_BYTES, name: 'single-record answers' }
    : { bytes: maxResponseBytes, name: 'maxResponseBytes' };
}
