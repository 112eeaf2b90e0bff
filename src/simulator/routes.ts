/**
 * Routing on the raw path. Each segment is decoded once, so a run id holding `/` arrives encoded as
 * one segment and still matches. The table is derived from PATHS in src/api/endpoints.ts, the one
 * list of what the client requests; everything else (for instance GET
 * /CMDB/v2/system/data-ingestion/run, which starts an ingestion on the real service) is unknown.
 */
import { DATA_ENDPOINTS, PATHS, TOKEN_PATH, methodOf, type EndpointName } from '../api/endpoints.js';

export type Route =
  | { kind: 'cmdb'; endpoint: EndpointName; method: 'GET' | 'POST'; arg?: string }
  | { kind: 'admin'; segments: string[] }
  | { kind: 'unknown' }
  /** A `%` escape that does not decode. */
  | { kind: 'bad_path' };

const ARG = 'SIMULATOR-ARG-PLACEHOLDER';

interface Pattern {
  endpoint: EndpointName;
  method: 'GET' | 'POST';
  segments: string[];
}

const PATTERNS: Pattern[] = [
  { endpoint: 'access_token', method: 'POST', segments: TOKEN_PATH.split('/') },
  ...DATA_ENDPOINTS.flatMap((endpoint) =>
    PATHS[endpoint](ARG).map((path) => ({ endpoint, method: methodOf(endpoint), segments: path.split('/') })),
  ),
];

function decodeSegments(rawPath: string): string[] | undefined {
  try {
    return rawPath.split('/').map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}

function matches(pattern: Pattern, segments: readonly string[]): { arg?: string } | undefined {
  if (pattern.segments.length !== segments.length) return undefined;
  let arg: string | undefined;
  for (let i = 0; i < segments.length; i++) {
    const want = pattern.segments[i] as string;
    const got = segments[i] as string;
    if (want === ARG) arg = got;
    else if (want !== got) return undefined;
  }
  return arg === undefined ? {} : { arg };
}

export function route(rawPath: string): Route {
  const segments = decodeSegments(rawPath);
  if (!segments) return { kind: 'bad_path' };
  if (segments[1] === '_admin') return { kind: 'admin', segments: segments.slice(2) };
  for (const pattern of PATTERNS) {
    const m = matches(pattern, segments);
    if (m) return { kind: 'cmdb', endpoint: pattern.endpoint, method: pattern.method, ...m };
  }
  return { kind: 'unknown' };
}
