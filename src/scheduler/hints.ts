/**
 * What to do about a failed poll, per outcome. One line each, written for the operator who reads
 * the log or the landing page; the runner adds it to the failure's log line.
 */
export function hintFor(outcome: string, endpoint: string): string {
  if (outcome === '401') {
    return 'the CMDB rejected the credentials: check the client id and secret (CMDB_CLIENT_ID / CMDB_SECRET or the stack\'s clientId / secret), or replace the pre-issued token';
  }
  if (outcome === 'rejected') {
    return 'the token endpoint refused the client id and secret: check them, and clientIdKey (clientID or clientId) for this CMDB version';
  }
  if (outcome === '403') {
    const next = endpoint === 'data_ingestion_next' ? ' (the next-run endpoint often needs elevated rights)' : '';
    return `the token lacks the rights for this endpoint${next}: grant them in the CMDB's authorization tokens section, or add it to disabledEndpoints; it is retried on a slower back-off`;
  }
  if (outcome === '404') {
    return 'the CMDB does not serve this path: check that baseUrl is the address before /CMDB, or add the endpoint to disabledEndpoints if this CMDB version lacks it';
  }
  if (outcome === '429' || outcome === 'rate_limited') {
    return 'the CMDB is rate limiting the exporter: lower rateLimitPerMinute or raise the poll intervals; check whether other clients share the same account';
  }
  if (/^5\d\d$/.test(outcome)) {
    return 'the CMDB answered with a server error: check the service\'s health; the exporter retries with back-off and keeps the last good data until the stale limit';
  }
  if (outcome === 'timeout') {
    return 'no complete answer within timeoutSeconds: check the network and the CMDB\'s load, raise timeoutSeconds, or lower paging.connectorPageSize';
  }
  if (outcome === 'network') {
    return 'the CMDB cannot be reached: check baseUrl, DNS, firewalls, the proxy (HTTPS_PROXY / NO_PROXY) and TLS (tls.caFile)';
  }
  if (outcome === 'invalid_body') {
    return 'the response did not have the documented shape (the field is named above): check the CMDB version; report it with a sample body, secrets removed';
  }
  if (outcome === 'too_large') {
    return 'the response exceeded maxResponseBytes: raise it, or lower paging.connectorPageSize';
  }
  if (outcome === 'redirect_refused') {
    return 'the CMDB redirected to another host, where the token must not go: set baseUrl to the final address';
  }
  if (outcome === 'blocked') {
    return 'this endpoint depends on another one that is failing; fix that one first';
  }
  if (/^4\d\d$/.test(outcome)) {
    return 'the CMDB refused the request: check the exporter and CMDB versions; report it if it persists';
  }
  return 'an unexpected error inside the exporter: please report it with this log line';
}
