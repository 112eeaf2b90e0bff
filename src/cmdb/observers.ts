/**
 * The standing observers of a stack's road (src/cmdb/events.ts): the request metrics and the debug
 * line of each request, and the pause gauge with the log line that names the status that set a
 * pause. The client attaches them; the poll plan (plan.ts) and a backfill's figures attach their own.
 */
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import type { PauseEvent, RequestEvent, RoadEvents } from './events.js';
import type { Pause } from './pauses.js';

const round = (seconds: number): number => Math.round(seconds * 1000) / 1000;

/** cmdb_endpoint_requests_total, …_request_duration_seconds, …_response_bytes_total of the stack. */
export function requestMetrics(instruments: Instruments, stack: string): (e: RequestEvent) => void {
  return (e) => {
    const labels = { stack, endpoint: e.endpoint };
    instruments.requests.inc({ ...labels, outcome: e.outcome });
    // A hop answered with a redirect is counted; its time is the attempt's, observed once.
    if (!e.redirected) instruments.requestDuration.observe(labels, e.durationSeconds);
    if (e.bytes !== undefined) instruments.responseBytes.inc(labels, e.bytes);
  };
}

/** One line per request at debug: what was asked and what came back, never a header or a value. */
export function requestLog(logger: Logger): (e: RequestEvent) => void {
  return (e) => {
    if (!logger.isLevelEnabled('debug')) return;
    logger.debug(
      {
        endpoint: e.endpoint,
        request: e.request,
        ...(e.page === undefined ? {} : { page: e.page }),
        outcome: e.outcome,
        durationSeconds: round(e.durationSeconds),
        bytes: e.bytes,
        ...(e.decodedBytes !== undefined && e.decodedBytes !== e.bytes ? { decodedBytes: e.decodedBytes } : {}),
        attempt: e.attempt,
        budgetWaitSeconds: round(e.waitSeconds),
      },
      e.redirected ? 'CMDB request (redirected)' : 'CMDB request',
    );
  };
}

/** What set a pause, for the log: `a 503 to GET /CMDB/…` or `the token endpoint failing (POST /CMDB/v1/access_token)`. */
export function pauseCause(p: Pause): string {
  return p.status === undefined ? `the token endpoint failing (${p.request})` : `a ${p.status} to ${p.request}`;
}

/** Who waits, until when: the whole stack, or one endpoint group. */
export function pauseHolds(p: Pause): string {
  const until = new Date(p.until).toISOString();
  return p.scope === 'stack' ? `no request of this stack leaves until ${until}` : `the requests of the ${p.group} group wait until ${until}; the other endpoints go on`;
}

/** cmdb_rate_limit_paused_until_timestamp_seconds (the stack's pause), and a log line when a pause begins. */
export function pauseReport(instruments: Instruments, stack: string, logger: Logger): (e: PauseEvent) => void {
  return ({ pause, began }) => {
    if (!pause) {
      instruments.rateLimitPausedUntil.set({ stack }, 0);
      return;
    }
    if (pause.scope === 'stack') instruments.rateLimitPausedUntil.set({ stack }, pause.until / 1000);
    if (!began) return;
    const fields = { endpoint: pause.endpoint, status: pause.status, scope: pause.scope, ...(pause.group ? { group: pause.group } : {}), until: new Date(pause.until).toISOString() };
    logger.warn(fields, `paused by ${pauseCause(pause)}: ${pauseHolds(pause)} (a reload ends the pause)`);
  };
}

/** Attaches the standing observers; returns what detaches them. */
export function observeRoad(events: RoadEvents, instruments: Instruments, stack: string, logger: Logger): () => void {
  const off = [events.requests.on(requestMetrics(instruments, stack)), events.requests.on(requestLog(logger)), events.pauses.on(pauseReport(instruments, stack, logger))];
  return () => off.forEach((f) => f());
}

