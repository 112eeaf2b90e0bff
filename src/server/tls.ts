/**
 * TLS for the exporter's own server (tls_server_config of --web.config.file): the server options,
 * client-certificate policies Node has no single switch for, and re-reading the certificate, key
 * and client CA when their files change (a renewed certificate is picked up without a restart).
 */
import { statSync } from 'node:fs';
import type { Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { secureContextOptions, type WebTlsConfig } from '../config/web-config.js';
import type { Logger } from '../logger.js';

/** How often the files are checked for changes. */
export const TLS_RELOAD_CHECK_MS = 5_000;

/** Options for https.createServer. */
export function tlsServerOptions(tls: WebTlsConfig) {
  const ask = tls.clientAuthType !== 'NoClientCert';
  return {
    ...secureContextOptions(tls),
    requestCert: ask,
    // Only RequireAndVerifyClientCert lets OpenSSL refuse the handshake; the other policies
    // are checked on the finished handshake (clientCertificateRefusal).
    rejectUnauthorized: tls.clientAuthType === 'RequireAndVerifyClientCert',
    handshakeTimeout: 10_000,
  };
}

/** Why a finished handshake must be refused under the policy, or undefined to accept it. */
export function clientCertificateRefusal(tls: WebTlsConfig, socket: TLSSocket): string | undefined {
  const cert = socket.getPeerCertificate();
  const given = cert !== null && Object.keys(cert).length > 0;
  switch (tls.clientAuthType) {
    case 'NoClientCert':
    case 'RequestClientCert':
      return undefined;
    case 'RequireAnyClientCert':
      return given ? undefined : 'no client certificate';
    case 'VerifyClientCertIfGiven':
      return !given || socket.authorized ? undefined : `client certificate not verified: ${String(socket.authorizationError)}`;
    case 'RequireAndVerifyClientCert': {
      if (!given || !socket.authorized) return 'no verified client certificate';
      if (tls.clientAllowedSans.length === 0) return undefined;
      // "DNS:a.example, IP Address:10.0.0.1, email:x@y, URI:spiffe://…" → the values.
      const sans = (cert.subjectaltname ?? '').split(', ').map((s) => s.slice(s.indexOf(':') + 1));
      return sans.some((san) => tls.clientAllowedSans.includes(san)) ? undefined : 'client certificate SAN not allowed';
    }
  }
}

function fileStamps(tls: WebTlsConfig): string {
  return [tls.cert, tls.key, tls.clientCa]
    .map((s) => {
      if (!s || 'inline' in s) return '-';
      try {
        const st = statSync(s.file);
        return `${st.mtimeMs}/${st.size}/${st.ino}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}

/**
 * Watches the files (mtime, size, inode: a renamed-in file counts) and swaps the secure context
 * when they change. A broken new set keeps the old context and is logged once, until it changes again.
 */
export function watchCertificates(server: Server, tls: WebTlsConfig, logger: Logger, intervalMs = TLS_RELOAD_CHECK_MS): () => void {
  let seen = fileStamps(tls);
  const check = () => {
    const now = fileStamps(tls);
    if (now === seen) return;
    seen = now;
    try {
      server.setSecureContext(secureContextOptions(tls));
      logger.info('TLS certificate, key or client CA changed: reloaded');
    } catch (err) {
      logger.error(
        { code: (err as NodeJS.ErrnoException).code },
        `TLS files changed but cannot be used (${(err as Error).message}); the previous certificate stays in use`,
      );
    }
  };
  const timer = setInterval(check, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
