/**
 * Everything that guards the exporter's own HTTP server, in one place: the web config's TLS,
 * basic authentication and headers (--web.config.file), the cap on concurrent scrapes
 * (--web.max-requests), the connection cap and the timeouts. listen() in http.ts wraps its
 * listener in `requestListener()` and calls `secureServer()`; docs/security.md describes each control.
 */
import type { RequestListener, Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { WebConfig, WebTlsConfig } from '../config/web-config.js';
import type { Logger } from '../logger.js';
import { BasicAuth, requireBasicAuth, type RefusalReason } from './auth.js';
import { applyServerLimits, limitConcurrentRequests, type ServerLimits } from './limits.js';
import { clientCertificateRefusal, tlsServerOptions, watchCertificates } from './tls.js';

export interface Protection {
  readonly tls?: WebTlsConfig;
  readonly tlsOptions?: ReturnType<typeof tlsServerOptions>;
  readonly auth?: BasicAuth;
  readonly headers: Readonly<Record<string, string>>;
  readonly limits: ServerLimits;
  readonly refused: (reason: RefusalReason) => void;
  readonly logger: Logger;
  /** The path --web.max-requests caps. */
  readonly telemetryPath: string;
}

export function buildProtection(
  opts: Pick<Protection, 'limits' | 'refused' | 'logger'> & { readonly web?: WebConfig; readonly telemetryPath?: string },
): Protection {
  const { web, limits, refused, logger } = opts;
  for (const warning of web?.warnings ?? []) logger.warn({ webConfigFile: web?.file }, warning);
  return {
    tls: web?.tls,
    tlsOptions: web?.tls ? tlsServerOptions(web.tls) : undefined,
    auth: web && web.basicAuthUsers.size > 0 ? new BasicAuth(web.basicAuthUsers) : undefined,
    headers: web?.headers ?? {},
    limits,
    refused,
    logger,
    telemetryPath: opts.telemetryPath ?? '/metrics',
  };
}

/**
 * Headers and authentication for every request, ahead of both the /metrics fast path and express
 * (exporter-toolkit protects every path too): requestListener() puts it in front of the whole listener.
 */
function guard(p: Protection, next: RequestListener): RequestListener {
  const headers = Object.entries(p.headers);
  const auth = p.auth ? requireBasicAuth(p.auth, p.refused) : undefined;
  return (req, res) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    if (!auth) return void next(req, res);
    auth(req, res, (err?: unknown) => {
      if (err === undefined) return void next(req, res);
      p.logger.error({ err }, 'authentication failed internally');
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' }).end('internal error\n');
    });
  };
}

/** The server's request listener: the scrape cap first (cheap, before express), then guard(), then `next`. */
export function requestListener(p: Protection, next: RequestListener): RequestListener {
  return limitConcurrentRequests(p.limits.maxRequests, p.telemetryPath, p.refused, p.headers, guard(p, next));
}

/** Connection cap, timeouts, client-certificate policy and certificate reloading; returns a stop function. */
export function secureServer(server: Server, p: Protection): () => void {
  applyServerLimits(server, p.limits, p.refused);
  const tls = p.tls;
  if (!tls) return () => undefined;
  server.on('tlsClientError', () => p.refused('tls_handshake'));
  // Only these can refuse after the handshake; Node's own verification covers the rest.
  if (tls.clientAuthType === 'RequireAnyClientCert' || tls.clientAuthType === 'VerifyClientCertIfGiven' || tls.clientAllowedSans.length > 0) {
    server.on('secureConnection', (socket: TLSSocket) => {
      if (clientCertificateRefusal(tls, socket) !== undefined) {
        p.refused('tls_handshake');
        socket.destroy();
      }
    });
  }
  return watchCertificates(server as HttpsServer, tls, p.logger);
}
