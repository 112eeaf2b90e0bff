/**
 * When a stack's reading stops early, and why (docs/backfill.md, "Fails fast, and says why"): every
 * unit failing the same way, each after its retries, would grow the ETA to an hour of nothing.
 * Rejected credentials stop the stack at once; a run of network or token endpoint failures stops
 * the stack, a run of one endpoint's same failure (a 403 at once) that endpoint. An answer in
 * between starts a count again. Pure: the caller reports the outcomes.
 */
import { TOKEN_PATH } from '../api/endpoints.js';
import { CmdbError, CmdbHttpError, CmdbTokenRejectedError, CmdbTokensTakenError, CmdbUnauthorizedError } from '../errors.js';

/** Network errors or timeouts in a row (any endpoint) that stop a stack's reading. */
const STACK_FAILURES_LIMIT = 3;
/** The same failure of one endpoint in a row that stops that endpoint. */
const ENDPOINT_FAILURES_LIMIT = 5;

export interface StopReason {
  /** What happened, for the summary: `credentials rejected`, `3 timeouts in a row`. */
  readonly why: string;
  /** What to do about it. */
  readonly hint: string;
}

export type Verdict = { readonly action: 'go-on' } | { readonly action: 'skip-endpoint'; readonly why: string } | ({ readonly action: 'stop-stack' } & StopReason);

/** The kind of a failure: what repeats when the CMDB, or one endpoint of it, is the problem. */
export function failureKind(err: unknown): string {
  if (err instanceof CmdbTokensTakenError) return 'taken';
  if (err instanceof CmdbHttpError) return err.status >= 500 ? '5xx' : String(err.status);
  if (err instanceof CmdbError) return err.outcome;
  return 'error';
}

const STACK_KINDS: Record<string, string> = {
  timeout: 'requests timed out',
  network: 'requests could not reach the CMDB',
  token: 'token requests failed',
  taken: 'requests were refused (401) on every token just granted',
};

/** What to do when the stack's reading stopped on a run of `kind`. */
function stackHint(stack: string, kind: string): string {
  if (kind === 'taken') {
    return `The token endpoint accepts stack ${stack}'s credentials, but another process with the same client id (the daemon?) takes each token it grants: give the backfill the daemon's --storage.path (it then uses the daemon's token) or a client id of its own (docs/backfill.md), then run the same command again: what was read is kept.`;
  }
  return `Check that stack ${stack}'s CMDB${kind === 'token' ? ' and its token endpoint' : ''} is reachable and answering (baseUrl, proxy, timeoutSeconds), then run the same command again: what was read is kept.`;
}

/** A failure of the token request itself (`POST …/access_token`), whatever unit needed the token. */
function ofTokenEndpoint(err: unknown): boolean {
  return err instanceof CmdbError && err.request.endsWith(` ${TOKEN_PATH}`);
}

interface Run {
  kind: string | undefined;
  count: number;
}

function count(run: Run, kind: string): number {
  run.count = run.kind === kind ? run.count + 1 : 1;
  run.kind = kind;
  return run.count;
}

export class FailFast {
  private readonly stackRun: Run = { kind: undefined, count: 0 };
  private readonly endpointRuns = new Map<string, Run>();
  private stopped: StopReason | undefined;

  constructor(private readonly stack: string) {}

  /** Set once the stack's reading has stopped. */
  get stop(): StopReason | undefined {
    return this.stopped;
  }

  /** The stack's run of failures under way that the rule stops at `limit`, for the progress line's ETA. */
  streak(): { count: number; limit: number; what: string } | undefined {
    const { kind, count: n } = this.stackRun;
    if (this.stopped || kind === undefined || n === 0 || !(kind in STACK_KINDS)) return undefined;
    return { count: n, limit: STACK_FAILURES_LIMIT, what: STACK_KINDS[kind] as string };
  }

  succeeded(endpoint: string): void {
    this.stackRun.kind = undefined;
    this.stackRun.count = 0;
    this.endpointRuns.delete(endpoint);
  }

  failed(err: unknown, endpoint: string): Verdict {
    const message = (err as Error).message;
    const taken = err instanceof CmdbTokensTakenError;
    if (!taken && (err instanceof CmdbTokenRejectedError || err instanceof CmdbUnauthorizedError || (err instanceof CmdbHttpError && err.status === 401))) {
      this.stopped = {
        why: `credentials rejected (${message})`,
        hint: `Check the credentials of stack ${this.stack} (clientId and secret, or token) in the configuration or its environment variables, then run the same command again.`,
      };
      return { action: 'stop-stack', ...this.stopped };
    }
    if (err instanceof CmdbHttpError && err.status === 403) return { action: 'skip-endpoint', why: `forbidden (${message}): the token lacks the right for ${endpoint}` };
    const own = failureKind(err);
    const kind = own in STACK_KINDS || !ofTokenEndpoint(err) ? own : 'token';
    if (kind in STACK_KINDS) {
      const n = count(this.stackRun, kind);
      if (n < STACK_FAILURES_LIMIT) return { action: 'go-on' };
      this.stopped = { why: `${n} ${STACK_KINDS[kind]} in a row (last: ${message})`, hint: stackHint(this.stack, kind) };
      return { action: 'stop-stack', ...this.stopped };
    }
    const run = this.endpointRuns.get(endpoint) ?? { kind: undefined, count: 0 };
    this.endpointRuns.set(endpoint, run);
    const n = count(run, kind);
    return n < ENDPOINT_FAILURES_LIMIT ? { action: 'go-on' } : { action: 'skip-endpoint', why: `${n} failures of ${endpoint} in a row (last: ${message})` };
  }
}
