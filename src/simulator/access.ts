/**
 * Who may ask, and how often: issued tokens with optional expiry (and, in one-token-per-client mode,
 * only the newest token of the client valid), and a rolling-minute rate limit.
 */
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../errors.js';

export interface TokenExpiry {
  afterRequests?: number;
  afterSeconds?: number;
}

interface TokenRecord {
  /** Start of its lifetime: issue time, or when an expiry policy was set. */
  sinceMs: number;
  uses: number;
  expired: boolean;
}

function checkPositive(path: string, v: number | undefined): void {
  if (v !== undefined && !(Number.isFinite(v) && v >= 0)) throw new ConfigError([{ path, message: 'must be a number >= 0' }]);
}

export class TokenStore {
  private readonly tokens = new Map<string, TokenRecord>();
  private expiry: TokenExpiry | undefined;

  constructor(
    private readonly clock: () => number,
    /**
     * Keep only the newest token of the client (the simulator has one): issuing a token ends every
     * earlier one, as a service that keeps one token per client id does. Two processes sharing a
     * client id then take each other's tokens.
     */
    private readonly oneTokenPerClient = false,
  ) {}

  /** Random, not seeded: tokens are credentials, even in a simulator. */
  issue(): string {
    const token = randomBytes(24).toString('base64url');
    if (this.oneTokenPerClient) for (const record of this.tokens.values()) record.expired = true;
    this.tokens.set(token, { sinceMs: this.clock(), uses: 0, expired: false });
    return token;
  }

  issued(): string[] {
    return [...this.tokens.keys()];
  }

  /** Tokens already out count their lifetime from now, so a test can set expiry after fetching one. */
  setExpiry(expiry: TokenExpiry | undefined): void {
    checkPositive('afterRequests', expiry?.afterRequests);
    checkPositive('afterSeconds', expiry?.afterSeconds);
    this.expiry = expiry;
    for (const record of this.tokens.values()) {
      record.sinceMs = this.clock();
      record.uses = 0;
    }
  }

  currentExpiry(): TokenExpiry | undefined {
    return this.expiry;
  }

  /** Whether an `Authorization` header carries a live token; counts the use when it does. */
  authorize(header: string | undefined): boolean {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
    const record = match ? this.tokens.get(match[1] as string) : undefined;
    if (!record || record.expired) return false;
    const { afterRequests, afterSeconds } = this.expiry ?? {};
    const tooOld = afterSeconds !== undefined && this.clock() - record.sinceMs >= afterSeconds * 1000;
    if ((afterRequests !== undefined && record.uses >= afterRequests) || tooOld) {
      // Once expired a token stays expired, even if the policy is cleared later.
      record.expired = true;
      return false;
    }
    record.uses++;
    return true;
  }
}

export interface RateLimit {
  perMinute: number;
  retryAfter: boolean;
}

export type Admission = { admitted: true } | { admitted: false; retryAfterSeconds?: number };

/** N requests per rolling minute; refused requests do not count against the window. */
export class RateLimiter {
  private limit: RateLimit | undefined;
  private admittedAt: number[] = [];

  constructor(private readonly clock: () => number) {}

  set(limit: RateLimit | undefined): void {
    if (limit && !(Number.isInteger(limit.perMinute) && limit.perMinute >= 0)) {
      throw new ConfigError([{ path: 'perMinute', message: 'must be an integer >= 0' }]);
    }
    this.limit = limit;
    this.admittedAt = [];
  }

  current(): RateLimit | undefined {
    return this.limit;
  }

  admit(): Admission {
    if (!this.limit) return { admitted: true };
    const now = this.clock();
    this.admittedAt = this.admittedAt.filter((t) => t > now - 60_000);
    if (this.admittedAt.length < this.limit.perMinute) {
      this.admittedAt.push(now);
      return { admitted: true };
    }
    if (!this.limit.retryAfter) return { admitted: false };
    const oldest = this.admittedAt[0] ?? now;
    return { admitted: false, retryAfterSeconds: Math.max(1, Math.ceil((oldest + 60_000 - now) / 1000)) };
  }
}
