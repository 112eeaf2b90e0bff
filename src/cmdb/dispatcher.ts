/**
 * One undici dispatcher per stack: keep-alive pool, explicit connect/headers/body timeouts, the
 * stack's TLS options, and its proxy (explicit proxyUrl, else HTTP(S)_PROXY / NO_PROXY from env).
 */
import { Agent, EnvHttpProxyAgent, ProxyAgent, type Dispatcher } from 'undici';
import type { StackConfig } from '../config/types.js';

/** How long an idle pooled socket is kept; below the usual 5 s server keep-alive so we close first. */
const KEEP_ALIVE_MS = 4_000;

export function tlsConnectOptions(stack: StackConfig) {
  const { ca, cert, key, insecureSkipVerify } = stack.tls;
  return {
    timeout: stack.connectTimeoutSeconds * 1000,
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
    rejectUnauthorized: !insecureSkipVerify,
  };
}

function envValue(env: Record<string, string | undefined>, name: string): string | undefined {
  const v = env[name.toLowerCase()] ?? env[name.toUpperCase()];
  return v && v.trim() ? v.trim() : undefined;
}

export function createDispatcher(
  stack: StackConfig,
  env: Record<string, string | undefined> = process.env,
): Dispatcher {
  const connect = tlsConnectOptions(stack);
  const pool = {
    connect,
    headersTimeout: stack.timeoutSeconds * 1000,
    bodyTimeout: stack.timeoutSeconds * 1000,
    keepAliveTimeout: KEEP_ALIVE_MS,
    connections: Math.max(1, stack.maxConcurrency),
  };
  // Through a proxy the TLS options belong to the tunnelled connection (requestTls), not the proxy's;
  // `connect` stays for the direct connections EnvHttpProxyAgent makes to NO_PROXY hosts.
  const proxied = { ...pool, requestTls: connect, proxyTls: { timeout: connect.timeout } };
  if (stack.proxyUrl) return new ProxyAgent({ ...proxied, uri: stack.proxyUrl });
  const httpProxy = envValue(env, 'http_proxy');
  const httpsProxy = envValue(env, 'https_proxy');
  if (httpProxy || httpsProxy) {
    // '' rather than undefined: EnvHttpProxyAgent would otherwise fall back to process.env itself.
    return new EnvHttpProxyAgent({
      ...proxied,
      httpProxy: httpProxy ?? '',
      httpsProxy: httpsProxy ?? '',
      noProxy: envValue(env, 'no_proxy') ?? '',
    });
  }
  return new Agent(pool);
}
