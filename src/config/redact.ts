import { REDACTED, type SecretScrubber } from '../secrets.js';
import type { ExporterConfig, StackConfig } from './types.js';

const USERINFO = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@/i;

/** http://user:pass@proxy:3128 → http://user:[REDACTED]@proxy:3128 */
function redactUrl(url: string): string {
  return url.replace(USERINFO, (_m, scheme: string, userinfo: string) => {
    const colon = userinfo.indexOf(':');
    return colon < 0 ? `${scheme}${REDACTED}@` : `${scheme}${userinfo.slice(0, colon)}:${REDACTED}@`;
  });
}

/** PEM text is long and, for certificates, public: the log says what is there, not all of it. */
function pemSummary(pem: string): string {
  const count = pem.match(/-----BEGIN CERTIFICATE-----/g)?.length ?? 0;
  return `[PEM, ${count} certificate${count === 1 ? '' : 's'}, ${Buffer.byteLength(pem)} bytes]`;
}

function redactStack(stack: StackConfig): unknown {
  const { tls } = stack;
  return {
    ...stack,
    auth: stack.auth.kind === 'client' ? { ...stack.auth, secret: REDACTED } : { ...stack.auth, token: REDACTED },
    tls: {
      ...tls,
      ...(tls.ca === undefined ? {} : { ca: pemSummary(tls.ca) }),
      ...(tls.cert === undefined ? {} : { cert: pemSummary(tls.cert) }),
      ...(tls.key === undefined ? {} : { key: REDACTED }),
    },
    ...(stack.proxyUrl === undefined ? {} : { proxyUrl: redactUrl(stack.proxyUrl) }),
  };
}

/** A copy safe to log: secrets and tokens replaced by '[REDACTED]', file paths kept. */
export function redactConfig(config: ExporterConfig): unknown {
  return { ...config, stacks: config.stacks.map(redactStack) };
}

function proxySecrets(url: string | undefined): string[] {
  const userinfo = url === undefined ? undefined : USERINFO.exec(url)?.[2];
  if (userinfo === undefined || userinfo === '') return [];
  const colon = userinfo.indexOf(':');
  const secret = colon < 0 ? userinfo : userinfo.slice(colon + 1);
  let decoded = secret;
  try {
    decoded = decodeURIComponent(secret);
  } catch {
    // Not valid percent-encoding: the raw text is the secret.
  }
  return [secret, decoded];
}

/** Every secret value of one stack (client secret or token, TLS key, proxy password). */
export function secretsOfStack(stack: StackConfig): string[] {
  const values = new Set<string>([stack.auth.kind === 'client' ? stack.auth.secret : stack.auth.token]);
  if (stack.tls.key !== undefined) values.add(stack.tls.key);
  for (const s of proxySecrets(stack.proxyUrl)) values.add(s);
  values.delete('');
  return [...values];
}

/** All secret values of the config, to register with the SecretScrubber before anything is logged. */
export function secretsOf(config: ExporterConfig): string[] {
  return [...new Set(config.stacks.flatMap(secretsOfStack))];
}

/**
 * Tells the scrubber every secret of `config` where it is read (start, reload), before any of it is
 * logged, so that a secret pasted into another key is scrubbed from the first line on.
 */
export function registerSecrets(config: ExporterConfig, scrubber: SecretScrubber): void {
  for (const secret of secretsOf(config)) scrubber.add(secret);
}
