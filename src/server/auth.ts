/**
 * HTTP basic authentication against the bcrypt hashes of a web-config file (basic_auth_users), as
 * exporter-toolkit does: every path is protected, a missing or wrong credential gets 401 with
 * `WWW-Authenticate: Basic`. bcrypt is too slow to pay on every scrape: a credential that verified
 * once is remembered as an HMAC under a key made at start-up, and at most MAX_PENDING_VERIFICATIONS
 * bcrypt checks run at once (docs/security.md, "bcrypt without paying it per scrape").
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcryptjs';
import type { IncomingMessage, ServerResponse } from 'node:http';

export const MAX_PENDING_VERIFICATIONS = 4;
/**
 * A well-formed cost-10 hash: unknown users are checked against it so that they cost as much as
 * known ones. Its password does not matter: an unknown user is refused whatever bcrypt says.
 */
const DUMMY_HASH = '$2b$10$CwTycUXWue0Thq9StjUM0uJ8.Jq7f0l2m2Y5Tg9n3mN6o5qv7e1Yy';

export type AuthOutcome = 'ok' | 'unauthorized' | 'busy';

export class BasicAuth {
  private readonly key = randomBytes(32);
  private readonly verified = new Map<string, Buffer>();
  private pending = 0;

  constructor(private readonly users: ReadonlyMap<string, string>) {}

  async check(authorization: string | undefined): Promise<AuthOutcome> {
    const credentials = parseBasic(authorization);
    if (!credentials) return 'unauthorized';
    const { user, password } = credentials;
    const hash = this.users.get(user);
    const digest = this.digest(user, hash ?? DUMMY_HASH, password);
    const known = this.verified.get(user);
    if (hash !== undefined && known !== undefined && timingSafeEqual(known, digest)) return 'ok';
    if (this.pending >= MAX_PENDING_VERIFICATIONS) return 'busy';
    this.pending++;
    try {
      const match = await bcrypt.compare(password, hash ?? DUMMY_HASH);
      if (!match || hash === undefined) return 'unauthorized';
      this.verified.set(user, digest);
      return 'ok';
    } finally {
      this.pending--;
    }
  }

  private digest(user: string, hash: string, password: string): Buffer {
    return createHmac('sha256', this.key).update(user).update('\0').update(hash).update('\0').update(password).digest();
  }
}

/** `Basic base64(user:password)` → its parts; undefined when absent or malformed. */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  const m = /^Basic +([A-Za-z0-9+/]+=*) *$/i.exec(header ?? '');
  if (!m?.[1]) return undefined;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export type RefusalReason = 'unauthorized' | 'auth_busy' | 'max_requests' | 'max_connections' | 'tls_handshake';
export const REFUSAL_REASONS: readonly RefusalReason[] = ['unauthorized', 'auth_busy', 'max_requests', 'max_connections', 'tls_handshake'];

/** Express middleware (or plain node:http with a `next`): every path needs a valid user (exporter-toolkit protects every path too). */
export function requireBasicAuth(auth: BasicAuth, refused: (reason: RefusalReason) => void) {
  return (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): void => {
    auth.check(req.headers.authorization).then((outcome) => {
      if (outcome === 'ok') return next();
      if (outcome === 'busy') {
        refused('auth_busy');
        sendPlain(res, 503, 'too many authentication attempts at once; try again later\n', { 'Retry-After': '1' });
        return;
      }
      refused('unauthorized');
      sendPlain(res, 401, 'Unauthorized\n', { 'WWW-Authenticate': 'Basic realm="cmdb-exporter", charset="UTF-8"' });
    }, next);
  };
}

/** A short refusal; plain node:http, so the same gate serves express and the /metrics fast path. */
function sendPlain(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  res.statusCode = status;
  res.setHeader('Cache-Control', 'no-store');
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
