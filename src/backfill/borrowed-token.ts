/**
 * A backfill given the --storage.path of the daemon that polls with the same client id: one token
 * holder, the daemon (docs/backfill.md, "A client id of the backfill's own, or the daemon's
 * folder"). While a daemon holds the folder its token is used; after a 401 the folder is looked at
 * every POLL_MS for the daemon's renewal for `waitMs`, then the backfill asks for its own until the
 * daemon renews. The folder is read, never written; the token read goes to the scrubber.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { tokenSlot, type Credential, type TokenProvider } from '../cmdb/auth.js';
import { raceAbort } from '../cmdb/clock.js';
import type { StackConfig } from '../config/types.js';
import { CmdbAbortedError } from '../errors.js';
import type { Logger } from '../logger.js';
import { daemonToken, TOKENS_FILE, type DaemonToken } from '../persist/token-file.js';
import { describeHolder } from '../persist/lock.js';
import type { SecretScrubber } from '../secrets.js';

/** How often the folder is looked at while waiting for the daemon's new token. */
export const POLL_MS = 250;

export interface BorrowOptions {
  readonly dir: string;
  readonly stack: StackConfig;
  readonly scrubber: SecretScrubber;
  readonly logger: Logger;
  /** How long a 401 waits for the daemon to renew, ms. */
  readonly waitMs: number;
  /** What is in the folder now (default: token-file.ts daemonToken). */
  readonly look?: () => DaemonToken;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly now?: () => number;
  /** The backfill stops: a wait for the daemon ends. */
  readonly lifetime?: AbortSignal;
}

/** Two of the stack's shortest poll intervals, at least a minute: by then the daemon has polled and met the 401. */
export function daemonWaitMs(stack: StackConfig): number {
  const intervals = Object.values(stack.intervals as Readonly<Record<string, number>>).filter((s) => typeof s === 'number' && s > 0);
  return Math.max(60, 2 * Math.min(...intervals, 300)) * 1000;
}

export class BorrowedToken implements TokenProvider {
  /** The daemon's token in use (negative generations tell it from the client's own). */
  private borrowed: Credential | undefined;
  private generation = 0;
  private waiting: Promise<Credential> | undefined;
  /** The daemon's token that did not come back renewed in time: own tokens until the daemon's changes. */
  private gaveUpOn: string | undefined;

  constructor(
    private readonly own: TokenProvider,
    private readonly opts: BorrowOptions,
  ) {}

  get unauthorized(): boolean {
    return this.own.unauthorized;
  }

  async current(signal?: AbortSignal): Promise<Credential> {
    if (this.borrowed) return this.borrowed;
    const seen = this.look();
    if (!seen.daemon || this.mine(seen)) return this.own.current(signal);
    if (seen.token) return this.borrow(seen.token);
    // A daemon that has no token yet (its first poll is under way): its own comes soon.
    return this.wait(undefined, signal);
  }

  async renew(used: Credential, signal?: AbortSignal): Promise<Credential | undefined> {
    if (used.generation >= 0) {
      // The backfill's own token was refused: the daemon's, if a daemon holds the folder now.
      const seen = this.look();
      if (!seen.daemon || this.mine(seen)) return this.own.renew(used, signal);
      if (seen.token) return this.borrow(seen.token);
      return this.wait(undefined, signal);
    }
    if (this.borrowed && this.borrowed.token !== used.token) return this.borrowed;
    this.borrowed = undefined;
    return this.wait(used.token, signal);
  }

  accepted(): void {
    this.own.accepted();
  }

  refused(): void {
    this.own.refused();
  }

  /** What the folder holds for the stack now; a token that cannot be read is said once. */
  private look(): DaemonToken {
    const seen = (this.opts.look ?? (() => daemonToken(this.opts.dir, this.opts.stack)))();
    if (seen.problem && !this.saidProblem) {
      this.saidProblem = true;
      this.opts.logger.warn({ storagePath: this.opts.dir, problem: seen.problem }, `the daemon's token cannot be read from ${TOKENS_FILE}: this backfill asks for tokens of its own meanwhile`);
    }
    return seen;
  }

  private saidProblem = false;

  /** Own tokens: after the daemon's did not come back renewed in time, until the daemon renews; or when it cannot be read. */
  private mine(seen: DaemonToken): boolean {
    if (seen.problem) return true;
    if (this.gaveUpOn === undefined) return false;
    if (seen.token !== undefined && seen.token !== this.gaveUpOn) {
      this.gaveUpOn = undefined;
      return false;
    }
    return true;
  }

  private borrow(token: string): Credential {
    if (this.borrowed?.token === token) return this.borrowed;
    this.opts.scrubber.rotate(tokenSlot(this.opts.stack.name), token);
    this.borrowed = { token, generation: -++this.generation };
    return this.borrowed;
  }

  /** Waits for a daemon token other than `old` (one at all when undefined), shared by every request that needs it. */
  private wait(old: string | undefined, signal?: AbortSignal): Promise<Credential> {
    this.waiting ??= this.poll(old).finally(() => {
      this.waiting = undefined;
    });
    // A request stopped while it waits ends as the token request it stands for would.
    return raceAbort(this.waiting, signal).catch((e: unknown) => {
      throw signal?.aborted ? new CmdbAbortedError('POST access_token') : (e as Error);
    });
  }

  private async poll(old: string | undefined): Promise<Credential> {
    const now = this.opts.now ?? Date.now;
    // Rejects when the backfill stops (`lifetime`).
    const sleep = this.opts.sleep ?? ((ms: number, signal?: AbortSignal) => delay(ms, undefined, { signal }));
    const until = now() + this.opts.waitMs;
    let seen = this.look();
    while (seen.daemon && !seen.problem && (seen.token === undefined || seen.token === old) && now() < until) {
      try {
        await sleep(POLL_MS, this.opts.lifetime);
      } catch {
        throw new CmdbAbortedError('POST access_token');
      }
      seen = this.look();
    }
    if (seen.daemon && !seen.problem && seen.token !== undefined && seen.token !== old) return this.borrow(seen.token);
    if (seen.daemon && !seen.problem) {
      this.gaveUpOn = seen.token;
      this.opts.logger.warn(
        { storagePath: this.opts.dir, daemon: describeHolder(seen.daemon), waitedSeconds: Math.round(this.opts.waitMs / 1000) },
        "the daemon holding --storage.path did not renew the stack's token in time: this backfill asks for its own (the daemon's is then ended where the CMDB keeps one token per client), and goes back to the daemon's when it renews",
      );
    }
    return this.own.current();
  }
}

/**
 * What the backfill says at start of the token of the stacks that ask for one: without the daemon's
 * folder, that a daemon with the same client id loses its token to it, and how to avoid it; with it, whose.
 */
export function tokenNote(stacks: readonly StackConfig[], storagePath: string | undefined): string {
  const names = stacks.filter((s) => s.auth.kind === 'client').map((s) => s.name);
  if (names.length === 0) return '';
  const which = `stack${names.length === 1 ? '' : 's'} ${names.join(', ')}`;
  if (storagePath === undefined) {
    return (
      `token of ${which}: a daemon polling with the same client id loses its token each time this backfill asks for one, where the CMDB keeps one token per client (and takes this backfill's in turn): ` +
      "give this backfill the daemon's --storage.path (it then uses the daemon's token and asks for none), or a client id of its own (docs/backfill.md)"
    );
  }
  const daemon = stacks.map((s) => daemonToken(storagePath, s).daemon).find((d) => d !== undefined);
  return daemon
    ? `token of ${which}: the daemon's, ${describeHolder(daemon)} holding ${storagePath}; on a 401 this backfill waits for the daemon to renew it, and asks the CMDB for none of its own`
    : `token of ${which}: no daemon holds ${storagePath} now, so this backfill asks for its own; once a daemon runs there, it uses the daemon's`;
}
