/**
 * Bounds of the exporter's own HTTP server, so that a flood of scrapes or idle connections cannot
 * take memory or descriptors the upstream polls need (10,000 concurrent scrapes took 3 GB, 20,000
 * idle connections starved the CMDB client of descriptors with EMFILE): `maxRequests` concurrent
 * requests of the telemetry path, `maxConnections` from the open-files limit, and timeouts for
 * headers, requests, keep-alive and idle sockets (docs/security.md tables each).
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { RefusalReason } from './auth.js';

export const DEFAULT_MAX_REQUESTS = 40;

export interface ServerLimits {
  /** Concurrent requests of the telemetry path; 0: no limit. */
  readonly maxRequests: number;
  readonly maxConnections: number;
  /** Time to receive a request's headers (slow-loris bound; also closes connections that send nothing). */
  readonly headersTimeoutMs: number;
  /** Time to receive a whole request. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection is kept between requests. */
  readonly keepAliveTimeoutMs: number;
  /** A socket with no traffic either way for this long is closed (a client that stopped reading). */
  readonly socketTimeoutMs: number;
  /**
   * Connections the kernel queues before they are accepted (capped by net.core.somaxconn). Node's
   * default, 511, overflows under a burst of thousands of connects; the overflow is reset after
   * a minute of retried SYN-ACKs instead of being answered (a prompt 503 needs an accepted socket).
   */
  readonly listenBacklog: number;
}

/**
 * Defaults: Prometheus scrapes every 15–60 s over one keep-alive connection, so 65 s of keep-alive
 * lets it reuse its connection (and TLS session) from scrape to scrape; a request has 10 s for its
 * headers and 30 s in all; a socket silent for 2 minutes is closed.
 */
export function defaultLimits(maxRequests = DEFAULT_MAX_REQUESTS, openFiles = openFilesSoftLimit()): ServerLimits {
  return {
    maxRequests,
    maxConnections: maxConnectionsFor(openFiles),
    headersTimeoutMs: 10_000,
    requestTimeoutMs: 30_000,
    keepAliveTimeoutMs: 65_000,
    socketTimeoutMs: 120_000,
    listenBacklog: 4096,
  };
}

/** Assumed when the limit cannot be read (not Linux): the common default soft limit. */
const ASSUMED_OPEN_FILES = 1024;

/** The soft "Max open files" of this process from /proc/self/limits; a fallback elsewhere. */
export function openFilesSoftLimit(limitsText?: string): number {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return ASSUMED_OPEN_FILES;
    }
  }
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  if (soft === 'unlimited') return 1_048_576;
  const n = Number(soft);
  return Number.isInteger(n) && n > 0 ? n : ASSUMED_OPEN_FILES;
}

/**
 * Connections the server accepts: the open-files limit minus a reserve of a quarter (at least 256)
 * for the CMDB client (maxConcurrency connections per stack), files and the runtime itself.
 */
export function maxConnectionsFor(openFiles: number): number {
  const reserve = Math.max(256, Math.ceil(openFiles / 4));
  return Math.max(32, openFiles - reserve);
}

/**
 * A request listener in front of the express app: requests of the telemetry path beyond `max` in
 * flight get 503 here, before express builds its request objects — under a flood of thousands of
 * connections that per-request cost, not the exposition, is what delays the answers (0: unbounded).
 */
export function limitConcurrentRequests(
  max: number,
  telemetryPath: string,
  refused: (reason: RefusalReason) => void,
  headers: Readonly<Record<string, string>>,
  next: RequestListener,
): RequestListener {
  let inFlight = 0;
  const body = `limit of ${max} concurrent requests reached (--web.max-requests); try again later\n`;
  return (req: IncomingMessage, res: ServerResponse) => {
    const path = pathOf(req.url);
    if (max <= 0 || (path !== telemetryPath && path !== `${telemetryPath}/`)) return next(req, res);
    if (inFlight >= max) {
      refused('max_requests');
      res.writeHead(503, { ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Retry-After': '1', 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
      return;
    }
    inFlight++;
    // 'close' fires once whether the response finished or the client went away.
    res.once('close', () => inFlight--);
    next(req, res);
  };
}

/** Applies the connection cap and the timeouts to a listening (or about to listen) server. */
export function applyServerLimits(server: Server, limits: ServerLimits, refused: (reason: RefusalReason) => void): void {
  server.maxConnections = limits.maxConnections;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.setTimeout(limits.socketTimeoutMs, (socket) => socket.destroy());
  // Node closes connections beyond maxConnections at once and says so with 'drop' (Node ≥ 18.6).
  server.on('drop', () => refused('max_connections'));
}

/** The path of a request target: the URL without its query or fragment. */
export function pathOf(url: string | undefined): string {
  const u = url ?? '';
  const end = u.search(/[?#]/);
  return end < 0 ? u : u.slice(0, end);
}
