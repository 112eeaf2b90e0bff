/**
 * Bearer tokens of one stack: fetched from the access_token endpoint (client id + secret) or
 * pre-issued. A 401 leads to at most one renewal per token, shared by every request that saw it.
 *
 * A fetched token refused (401) before any request took it was granted by the token endpoint a
 * moment before: the credentials are good, and another process with the same client id took the
 * token (a CMDB that keeps one token per client ends a client's older tokens when it grants a new
 * one). So such a token is renewed again, after a back-off with jitter (1, 2, 4, 8 s: the two
 * processes stop asking at the same moment), up to TAKEN_RENEWALS times in a row; only the token
 * endpoint itself calls the credentials rejected (CmdbTokenRejectedError).
 */
import { readFile } from 'node:fs/promises';
import type { StackAuth, StackConfig } from '../config/types.js';
import type { Instruments } from '../metrics/instruments.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import { CmdbAbortedError, CmdbError, CmdbHttpError, CmdbInvalidBodyError, CmdbTokenRejectedError } from '../errors.js';
import { TOKEN_PATH } from '../api/endpoints.js';
import { TokenResponseSchema, type TokenResponse } from '../api/schemas.js';
import { jsonDecoder } from './body.js';
import type { Reply } from './attempt.js';
import { raceAbort, realClock, type Clock } from './clock.js';
import { requestName, type Transport } from './transport.js';

/** A token and its generation: a 401 for an older generation than the current one needs no renewal. */
export interface Credential {
  readonly token: string;
  readonly generation: number;
}

export interface TokenProvider {
  /** True while a pre-issued token is being rejected. */
  readonly unauthorized: boolean;
  current(signal?: AbortSignal): Promise<Credential>;
  /** After a 401 answered to `used`: the credential for the retry, or undefined when there is none. */
  renew(used: Credential, signal?: AbortSignal): Promise<Credential | undefined>;
  /** A request with the current token succeeded. */
  accepted(): void;
  /** A request was finally refused with 401. */
  refused(): void;
}

const TOKEN_REQUEST = requestName('POST', TOKEN_PATH);

/** Tokens refused in a row, each just granted, after which a fetched token is no longer renewed. */
export const TAKEN_RENEWALS = 5;
const TAKEN_FIRST_BACKOFF_MS = 1000;
/** The streak warning is logged at most this often. */
const TAKEN_WARN_EVERY_MS = 10 * 60_000;

/** The wait before asking for the `n`th token in a row after the first was refused (n ≥ 1): doubling from 1 s, jittered to half. */
export function takenBackoffMs(n: number, random: () => number): number {
  return TAKEN_FIRST_BACKOFF_MS * 2 ** (n - 1) * (0.5 + Math.min(Math.max(random(), 0), 1) / 2);
}

/** The scrubber slot of a stack's bearer token: a renewed token replaces the one before the last. */
export function tokenSlot(stack: string): string {
  return `token:${stack}`;
}

export function jsonHeaders(userAgent: string): Record<string, string> {
  return { 'Content-Type': 'application/json', Accept: 'application/json', 'User-Agent': userAgent };
}

/** What a FetchedToken knows, handed to the stack's next runtime when its service and credentials stay. */
export interface TokenState {
  readonly credential: Credential | undefined;
  readonly generation: number;
  readonly idKey: string;
  readonly idKeySettled: boolean;
}

/** Client id + secret → token, single-flight. */
export class FetchedToken implements TokenProvider {
  readonly unauthorized = false;
  private credential: Credential | undefined;
  private generation = 0;
  private inflight: Promise<Credential> | undefined;
  /** The body key of the client id now used; switches once to the other spelling if that one works. */
  private idKey: string;
  /** A token was issued with idKey, or the other spelling was tried: no other spelling is tried again. */
  private idKeySettled = false;
  /** Tokens refused (401) in a row since a request last succeeded: past the first, each was just granted. */
  private refusedInARow = 0;
  /** When the streak warning was last logged (clock ms). */
  private warnedAt: number | undefined;

  constructor(
    private readonly auth: Extract<StackAuth, { kind: 'client' }>,
    private readonly deps: {
      /** The stack's settings now (a reload in place may change the user agent). */
      settings: () => StackConfig;
      transport: Transport;
      instruments: Instruments;
      scrubber: SecretScrubber;
      /** Aborted by close(): the shared fetch outlives any single caller's signal. */
      lifetime: AbortSignal;
      logger?: Logger;
      /** The back-off's wait (default: real time). */
      clock?: Clock;
      /** A draw in [0, 1) for the back-off's jitter. */
      random?: () => number;
      /** A backfill's: the answer must start within this (s), and one that timed out is not asked again (its unit fails). */
      firstByteSeconds?: number;
      /** Told of each token granted (the daemon keeps it for a backfill with --storage.path: src/persist/token-file.ts). */
      granted?: (token: string) => void;
    },
    inherited?: TokenState,
  ) {
    this.idKey = auth.clientIdKey;
    if (inherited) {
      this.credential = inherited.credential;
      this.generation = inherited.generation;
      this.idKey = inherited.idKey;
      this.idKeySettled = inherited.idKeySettled;
    }
  }

  /** The token held and the client-id spelling learned (an in-flight fetch is not handed over). */
  state(): TokenState {
    return { credential: this.credential, generation: this.generation, idKey: this.idKey, idKeySettled: this.idKeySettled };
  }

  current(signal?: AbortSignal): Promise<Credential> {
    return this.credential ? Promise.resolve(this.credential) : this.shared(signal);
  }

  /** A new token after `used` was refused; undefined once TAKEN_RENEWALS tokens in a row were refused, each just granted. */
  renew(used: Credential, signal?: AbortSignal): Promise<Credential | undefined> {
    if (this.credential && this.credential.generation > used.generation) return Promise.resolve(this.credential);
    if (this.credential?.generation === used.generation) {
      this.credential = undefined;
      this.refusedInARow += 1;
      // At the second refusal in a streak, and at most once per TAKEN_WARN_EVERY_MS: the operator
      // learns why requests take two tries and what ends it, not once per poll (an endpoint that
      // answers 401 to every token starts a streak at each of its polls).
      const now = (this.deps.clock ?? realClock).now();
      if (this.refusedInARow === 2 && (this.warnedAt === undefined || now - this.warnedAt >= TAKEN_WARN_EVERY_MS)) {
        this.warnedAt = now;
        this.deps.logger?.warn(
          { renewals: TAKEN_RENEWALS },
          'the CMDB refused a token its token endpoint had just granted (401): another process with the same client id may be taking the tokens (a CMDB that keeps one token per client), or the CMDB refuses that request to the client; asking for a new one with back-off. If more than one process uses this client id, give each one of its own',
        );
      }
    }
    if (this.refusedInARow > TAKEN_RENEWALS) return Promise.resolve(undefined);
    // The first renewal is at once (a token that worked expired); past it each token was taken at once.
    const wait = this.refusedInARow > 1 ? takenBackoffMs(this.refusedInARow - 1, this.deps.random ?? Math.random) : 0;
    return this.shared(signal, wait);
  }

  accepted(): void {
    this.refusedInARow = 0;
  }

  refused(): void {}

  private async shared(signal?: AbortSignal, waitMs = 0): Promise<Credential> {
    if (!this.inflight) {
      const p =
        waitMs > 0
          ? (this.deps.clock ?? realClock).sleep(waitMs, this.deps.lifetime).then(
              () => this.fetch(),
              () => {
                throw new CmdbAbortedError(TOKEN_REQUEST);
              },
            )
          : this.fetch();
      this.inflight = p;
      const clear = () => {
        if (this.inflight === p) this.inflight = undefined;
      };
      p.then(clear, clear);
    }
    try {
      return await raceAbort(this.inflight, signal);
    } catch (err) {
      // Only this caller gave up; the fetch goes on for the others.
      if (signal?.aborted && !(err instanceof CmdbError)) throw new CmdbAbortedError(TOKEN_REQUEST);
      throw err;
    }
  }

  /**
   * The documentation spells the body key `clientID` in its table and `clientId` in its example
   * (docs/cmdb-api-notes.md): when the configured one is refused, the other is tried once, and
   * the one that works is kept for every later fetch.
   */
  private async fetch(): Promise<Credential> {
    try {
      return await this.request(this.idKey);
    } catch (err) {
      const other = OTHER_SPELLING[this.idKey];
      if (!(err instanceof CmdbTokenRejectedError) || this.idKeySettled || other === undefined) throw err;
      this.idKeySettled = true;
      let credential: Credential;
      try {
        credential = await this.request(other);
      } catch {
        // The other spelling did not help either: the first refusal is the one to report.
        throw err;
      }
      this.deps.logger?.warn({ clientIdKey: other, configured: this.idKey }, `the token endpoint refused the client id under ${this.idKey} and accepted it under ${other}; set clientIdKey: ${other}`);
      this.idKey = other;
      return credential;
    }
  }

  private async request(idKey: string): Promise<Credential> {
    const { transport, instruments, scrubber, lifetime } = this.deps;
    const stack = this.deps.settings();
    const count = (outcome: 'success' | 'rejected' | 'error') => instruments.tokenRequests.inc({ stack: stack.name, outcome });
    const body = JSON.stringify({ [idKey]: this.auth.clientId, secret: this.auth.secret });
    let outcome;
    try {
      const deadline = this.deps.firstByteSeconds;
      outcome = await transport.send(
        { endpoint: 'access_token', method: 'POST', path: TOKEN_PATH, headers: jsonHeaders(stack.userAgent), body, ...(deadline !== undefined ? { firstByteSeconds: deadline, retryTimeouts: false } : {}) },
        decodeToken,
        { signal: lifetime },
      );
    } catch (err) {
      // A 2xx that is not a token response at all: counted invalid_body per request, rejected per fetch.
      if (err instanceof CmdbInvalidBodyError) {
        count('rejected');
        const detail = err.message.replace(`${err.request}: `, '');
        throw new CmdbTokenRejectedError(TOKEN_REQUEST, scrubber.scrub(`token rejected: ${detail}`), { cause: err });
      }
      if (!(err instanceof CmdbAbortedError)) count('error');
      throw err;
    }
    if (!outcome.ok && outcome.reply.status >= 500) {
      count('error');
      throw new CmdbHttpError(TOKEN_REQUEST, outcome.reply.status, outcome.reply.statusText);
    }
    const parsed = outcome.ok ? outcome.value : readTokenBody(outcome.reply);
    const token = parsed?.data?.token;
    if (outcome.ok && parsed && Number(parsed.code) === 200 && token) {
      // The token this one replaces is scrubbed a little longer (as the previous), older ones not at all.
      scrubber.rotate(tokenSlot(stack.name), token);
      count('success');
      this.credential = { token, generation: ++this.generation };
      this.idKeySettled = true;
      try {
        this.deps.granted?.(token);
      } catch {
        // Whoever keeps it says why it could not; the token works all the same.
      }
      return this.credential;
    }
    count('rejected');
    const status = outcome.ok ? undefined : outcome.reply;
    throw new CmdbTokenRejectedError(TOKEN_REQUEST, scrubber.scrub(rejectionDetail(status, parsed)));
  }
}

const OTHER_SPELLING: Readonly<Record<string, string>> = { clientID: 'clientId', clientId: 'clientID' };

const decodeToken = jsonDecoder(TokenResponseSchema);

/** The body of a non-2xx token reply, read as a 2xx's is: undefined when it is not a token response. */
function readTokenBody(reply: Reply): TokenResponse | undefined {
  try {
    return decodeToken(reply, TOKEN_REQUEST);
  } catch {
    return undefined;
  }
}

function rejectionDetail(reply: Reply | undefined, parsed: TokenResponse | undefined): string {
  const parts: string[] = [];
  if (reply) parts.push(`${reply.status} ${reply.statusText}`.trim());
  if (!parsed) parts.push('the response is not a token response');
  else {
    if (parsed.code != null) parts.push(`code ${parsed.code}`);
    // The server's words are never shown: its message may quote what it was sent (the secret).
    if (parsed.message) parts.push(`a message of ${parsed.message.length} characters (not shown)`);
    if (Number(parsed.code) === 200 && !parsed.data?.token) parts.push('no data.token');
  }
  return `token rejected: ${parts.join(', ')}`;
}

/** A pre-issued token; on a 401 the token file, if any, is re-read once to pick up a rotation. */
export class PreIssuedToken implements TokenProvider {
  private credential: Credential;
  private rejected = false;

  constructor(
    private readonly auth: Extract<StackAuth, { kind: 'token' }>,
    /** `stack`: the stack's name, the scrubber slot of its rotated tokens. */
    private readonly deps: { scrubber: SecretScrubber; logger: Logger; stack: string },
  ) {
    this.credential = { token: auth.token, generation: 1 };
  }

  get unauthorized(): boolean {
    return this.rejected;
  }

  current(): Promise<Credential> {
    return Promise.resolve(this.credential);
  }

  async renew(used: Credential): Promise<Credential | undefined> {
    if (this.credential.generation > used.generation) return this.credential;
    const fresh = this.auth.tokenFile ? await readToken(this.auth.tokenFile) : undefined;
    // Another request may have picked up the rotation while we were reading.
    if (this.credential.generation > used.generation) return this.credential;
    if (!fresh || fresh === this.credential.token) return undefined;
    this.deps.scrubber.rotate(tokenSlot(this.deps.stack), fresh);
    this.credential = { token: fresh, generation: this.credential.generation + 1 };
    return this.credential;
  }

  accepted(): void {
    this.rejected = false;
  }

  refused(): void {
    if (this.rejected) return;
    this.rejected = true;
    this.deps.logger.error(
      { tokenFile: this.auth.tokenFile },
      'the CMDB rejects the pre-issued token (401); requests fail until it is replaced',
    );
  }
}

async function readToken(file: string): Promise<string | undefined> {
  try {
    return (await readFile(file, 'utf8')).trim() || undefined;
  } catch {
    // An unreadable file is the same as an unchanged one: the 401 stands.
    return undefined;
  }
}
