/**
 * What to do about a failed poll, per outcome. One line each, written for the operator who reads
 * the log or the landing page; the runner adds it to the failure's log line.
 */
import type { PollOutcome, StatusOutcome } from '../errors.js';

type Hinted = Exclude<PollOutcome, StatusOutcome | 'success'>;

/** How the stack authenticates: the same 401 means something else for each (src/config/types.ts StackAuth). */
export type AuthKind = 'client' | 'token';

/** Tokens taken: what both 401 hints of client credentials say of another process with the same client id. */
const TOKENS_TAKEN =
  "another process with the same client id (a backfill?) may take each token it grants (a CMDB that keeps one token per client): give each process a client id of its own, or give the backfill this daemon's --storage.path (it then uses the daemon's token)";

/**
 * A 401 after the client renewed its token: with client credentials the token endpoint has just
 * accepted them, so they are not what is rejected (a request refused to the client, or tokens taken
 * by another process of the same client id); a pre-issued token is what is refused.
 */
const UNAUTHORIZED_HINTS: Record<AuthKind, string> = {
  client: `the CMDB refused this request (401) with a token its token endpoint had just granted, so the client id and secret are accepted: ${TOKENS_TAKEN}; or the CMDB refuses this endpoint to the client: check the client's rights in the CMDB's authorization tokens section`,
  token: 'the CMDB refuses the pre-issued token: replace it (CMDB_TOKEN or the stack\'s token / tokenFile)',
};

const STATUS_HINTS: Partial<Record<StatusOutcome, (endpoint: string, auth?: AuthKind) => string>> = {
  '401': (_endpoint, auth) =>
    auth
      ? UNAUTHORIZED_HINTS[auth]
      : `the CMDB rejected the credentials: check the client id and secret (CMDB_CLIENT_ID / CMDB_SECRET or the stack's clientId / secret), or replace the pre-issued token; if the token endpoint accepts them, ${TOKENS_TAKEN}`,
  '404': () =>
    'the CMDB does not serve this path: check that baseUrl is the address before /CMDB, or add the endpoint to disabledEndpoints if this CMDB version lacks it',
  '429': () => HINTS.rate_limited,
};

function forbiddenHint(endpoint: string): string {
  const next = endpoint === 'data_ingestion_next' ? ' (the next-run endpoint needs elevated rights that ordinary API tokens lack)' : '';
  return `forbidden: the token lacks the permission for this endpoint${next}. Grant it in the CMDB's authorization tokens section, or add ${endpoint} to disabledEndpoints; it is retried on a slower back-off`;
}

const HINTS: Record<Exclude<Hinted, 'forbidden'>, string> = {
  rejected: 'the token endpoint refused the client id and secret: check them, and clientIdKey (clientID or clientId) for this CMDB version',
  rate_limited:
    'the CMDB is rate limiting the exporter: lower rateLimitPerMinute or raise the poll intervals; check whether other clients share the same account',
  timeout:
    "no complete answer within timeoutSeconds, or the poll (retries and waits included) did not finish within its interval: check the network and the CMDB's load and whether the stack is paused by a Retry-After; raise timeoutSeconds or the interval, or lower paging.connectorPageSize",
  network: 'the CMDB cannot be reached: check baseUrl, DNS, firewalls, the proxy (HTTPS_PROXY / NO_PROXY) and TLS (tls.caFile)',
  invalid_body:
    'the response did not have the documented shape (the field is named above): check the CMDB version; report it with a sample body, secrets removed',
  too_large: 'the response exceeded maxResponseBytes: raise it, or lower paging.connectorPageSize',
  redirect_refused: 'the CMDB redirected to another host, where the token must not go: set baseUrl to the final address',
  blocked: 'this endpoint depends on another one that is failing; fix that one first',
  aborted: 'an unexpected error inside the exporter: please report it with this log line',
  error: 'an unexpected error inside the exporter: please report it with this log line',
};

const SERVER_ERROR =
  "the CMDB answered with a server error: check the service's health; the exporter retries with back-off and keeps the last good data until the stale limit";
const CLIENT_ERROR = 'the CMDB refused the request: check the exporter and CMDB versions; report it if it persists';

/** What to do about `outcome` of `endpoint`; `auth`, when known, makes a 401's hint specific. */
export function hintFor(outcome: PollOutcome, endpoint: string, auth?: AuthKind): string {
  if (outcome === 'success') return '';
  if (outcome === 'forbidden') return forbiddenHint(endpoint);
  if (outcome in HINTS) return HINTS[outcome as Exclude<Hinted, 'forbidden'>];
  const byStatus = STATUS_HINTS[outcome as StatusOutcome];
  if (byStatus) return byStatus(endpoint, auth);
  if (outcome.startsWith('5')) return SERVER_ERROR;
  if (outcome.startsWith('4')) return CLIENT_ERROR;
  return HINTS.error;
}
