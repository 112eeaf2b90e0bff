/**
 * Runs one endpoint's poll and records its outcome: the one place that decides how a failure is
 * logged and counted (conventions: layered errors, one decision point).
 *
 * - Success: the store gets the new sample set (the poll ends once it is applied); a recovery is
 *   logged once.
 * - Failure: the store marks the endpoint down (series kept until the stale limit); the failure is
 *   logged when it starts or changes kind, then only as a periodic reminder, never every interval.
 * - 403: state and outcome `forbidden` (cmdb_endpoint_forbidden 1); not polled again until a
 *   back-off (doubling, capped) has passed.
 * - Shutdown aborts are not failures.
 */
import type { DataEndpoint } from '../api/endpoints.js';
import type { StackConfig } from '../config/types.js';
import { CmdbAbortedError, CmdbError, CmdbHttpError, type PollOutcome } from '../errors.js';
import type { Logger } from '../logger.js';
import type { SecretScrubber } from '../secrets.js';
import type { Sample } from '../metrics/sample.js';
import type { SnapshotStore } from '../store/snapshot-store.js';
import { deadlineReached, PollTimeoutError } from './deadline.js';
import { hintFor } from './hints.js';
import { RUNNER_STATE_VERSION, type EndpointState, type RestoredEndpoint, type RunnerState } from './runner-state.js';

/** What a poll produced. */
export type PollResult =
  /** New data: replaces the endpoint's series. */
  | { readonly kind: 'samples'; readonly samples: readonly Sample[] }
  /** No request was needed: what the store holds is still current. */
  | { readonly kind: 'unchanged' }
  /** Some ids failed: fresh results merged with the last good ones; the endpoint reports down. */
  | { readonly kind: 'partial'; readonly samples: readonly Sample[]; readonly error: unknown };

export interface EndpointStatus {
  readonly endpoint: DataEndpoint;
  readonly state: EndpointState;
  /** Unix seconds of the last finished poll. */
  readonly lastPollAt?: number;
  readonly lastDurationSeconds?: number;
  readonly outcome?: PollOutcome;
  /** Scrubbed error message of the last failure, safe to show. */
  readonly error?: string;
  readonly hint?: string;
  readonly consecutiveFailures: number;
  /** While in 403 back-off: when the next attempt is due (unix seconds). */
  readonly retryAt?: number;
}

type Mutable = { -readonly [K in keyof EndpointStatus]: EndpointStatus[K] };

/** The 403 back-offs of a runner, handed to the stack's next runtime on reload (same service and credentials). */
export type ForbiddenState = ReadonlyMap<DataEndpoint, { readonly until: number; readonly backoff: number; readonly status: EndpointStatus }>;

export const REMINDER_SECONDS = 3600;

/** Outcomes that fail every endpoint of the stack for one reason: logged once per stack, not per endpoint. */
const STACK_WIDE: ReadonlySet<PollOutcome> = new Set<PollOutcome>(['rejected']);
const STACK = '*';

export class EndpointRunner {
  private readonly statuses = new Map<DataEndpoint, Mutable>();
  private readonly forbidden = new Map<DataEndpoint, { until: number; backoff: number }>();
  /** Last failure logged, per endpoint, or under STACK for stack-wide outcomes. */
  private readonly lastLogged = new Map<DataEndpoint | typeof STACK, { outcome: PollOutcome; at: number }>();

  constructor(
    private opts: {
      stack: StackConfig;
      endpoints: readonly DataEndpoint[];
      store: SnapshotStore;
      logger: Logger;
      scrubber: SecretScrubber;
      /** Unix seconds. */
      now: () => number;
      /** The 403 back-offs of the stack's previous runtime: those endpoints wait them out here too. */
      forbidden?: ForbiddenState;
      /** What an earlier process knew of the endpoints (--storage.path, runnerStateFrom). */
      restored?: ReadonlyMap<DataEndpoint, RestoredEndpoint>;
    },
  ) {
    for (const endpoint of opts.endpoints) {
      const carried = opts.forbidden?.get(endpoint);
      const restored = carried ? undefined : opts.restored?.get(endpoint);
      if (restored) {
        this.restore(restored);
        continue;
      }
      this.statuses.set(endpoint, carried ? { ...carried.status } : { endpoint, state: 'pending', consecutiveFailures: 0 });
      if (carried) {
        this.forbidden.set(endpoint, { until: carried.until, backoff: carried.backoff });
        // Logged when it started: the new runtime does not log it again as new.
        this.lastLogged.set(endpoint, { outcome: 'forbidden', at: carried.status.lastPollAt ?? opts.now() });
      }
    }
  }

  /** What a restart keeps (--storage.path): each endpoint's state and 403 back-off, no error text. */
  exportState(): RunnerState {
    const endpoints = [...this.statuses.values()].map((s): RestoredEndpoint => {
      const gate = s.state === 'forbidden' ? this.forbidden.get(s.endpoint) : undefined;
      const { endpoint, state, lastPollAt, lastDurationSeconds, outcome, consecutiveFailures } = s;
      return { endpoint, state, lastPollAt, lastDurationSeconds, outcome, consecutiveFailures, ...(gate ? { forbidden: { ...gate } } : {}) };
    });
    return { v: RUNNER_STATE_VERSION, endpoints };
  }

  /** An endpoint as an earlier process left it: its failure is shown as restored, its 403 back-off waited out. */
  private restore(r: RestoredEndpoint): void {
    const { forbidden: _gate, ...kept } = r;
    const failed = r.outcome !== undefined && r.outcome !== 'success';
    const status: Mutable = {
      ...kept,
      ...(failed ? { error: `the last poll before the restart failed (${r.outcome})`, hint: hintFor(r.outcome as PollOutcome, r.endpoint, this.opts.stack.auth.kind) } : {}),
    };
    this.statuses.set(r.endpoint, status);
    if (r.state !== 'forbidden' || !r.forbidden) return;
    this.forbidden.set(r.endpoint, { ...r.forbidden });
    status.retryAt = r.forbidden.until;
    this.lastLogged.set(r.endpoint, { outcome: 'forbidden', at: r.lastPollAt ?? this.opts.now() });
  }

  /**
   * A reload changed the stack's settings in place: later polls run under `stack`; an endpoint now
   * polled starts pending, one no longer polled is forgotten with its back-off. The others keep
   * their status.
   */
  reconfigure(stack: StackConfig, endpoints: readonly DataEndpoint[]): void {
    this.opts = { ...this.opts, stack, endpoints };
    for (const endpoint of [...this.statuses.keys()]) {
      if (endpoints.includes(endpoint)) continue;
      this.statuses.delete(endpoint);
      this.forbidden.delete(endpoint);
      this.lastLogged.delete(endpoint);
    }
    for (const endpoint of endpoints) if (!this.statuses.has(endpoint)) this.statuses.set(endpoint, { endpoint, state: 'pending', consecutiveFailures: 0 });
  }

  /** The endpoints in 403 back-off, with their status, for the stack's next runtime. */
  forbiddenState(): ForbiddenState {
    const out = new Map<DataEndpoint, { until: number; backoff: number; status: EndpointStatus }>();
    for (const [endpoint, gate] of this.forbidden) {
      const status = this.statuses.get(endpoint);
      if (status?.state === 'forbidden') out.set(endpoint, { ...gate, status: { ...status } });
    }
    return out;
  }

  enabled(endpoint: DataEndpoint): boolean {
    return this.statuses.has(endpoint);
  }

  status(): EndpointStatus[] {
    return [...this.statuses.values()].map((s) => ({ ...s }));
  }

  /** Endpoints that have not finished a first poll. */
  pending(): DataEndpoint[] {
    return [...this.statuses.values()].filter((s) => s.state === 'pending').map((s) => s.endpoint);
  }

  /**
   * Runs `poll` unless the endpoint is disabled or in 403 back-off. Never throws. `signal` is the
   * poll's signal (src/scheduler/deadline.ts): once its deadline has passed, the endpoint fails
   * with `timeout`, whether it was cut off or could not start; a shutdown abort is no failure.
   */
  async run(endpoint: DataEndpoint, poll: () => Promise<PollResult>, signal?: AbortSignal): Promise<void> {
    const status = this.statuses.get(endpoint);
    if (!status) return;
    const gate = this.forbidden.get(endpoint);
    if (gate && this.opts.now() < gate.until) return;
    const started = this.opts.now();
    const late = () => {
      const deadline = deadlineReached(signal);
      if (deadline) this.failed(status, new PollTimeoutError(endpoint, deadline.seconds, deadline.stalled), started);
    };
    if (signal?.aborted) return late();
    let result: PollResult;
    try {
      result = await poll();
    } catch (err) {
      if (err instanceof CmdbAbortedError) return late();
      this.failed(status, err, started);
      return;
    }
    const at = this.opts.now();
    const { store, stack } = this.opts;
    // The poll is complete once the store has applied what it brought: a scrape serves it from then on.
    if (result.kind === 'partial') {
      await store.fail(stack.name, endpoint, result.samples);
      this.failed(status, result.error, started, true);
      return;
    }
    await (result.kind === 'samples' ? store.succeed(stack.name, endpoint, result.samples, at) : store.confirm(stack.name, endpoint, at));
    this.succeeded(status, started, at);
  }

  /** The endpoint cannot be polled because the one it depends on failed: it reports down, quietly. */
  blocked(endpoint: DataEndpoint, reason: string): void {
    const status = this.statuses.get(endpoint);
    if (!status) return;
    void this.opts.store.fail(this.opts.stack.name, endpoint);
    Object.assign(status, { state: 'blocked', outcome: 'blocked', error: reason, hint: hintFor('blocked', endpoint), lastPollAt: this.opts.now() });
    this.opts.logger.debug({ endpoint, reason }, 'endpoint not polled');
  }

  private succeeded(status: Mutable, started: number, at: number): void {
    const { endpoint } = status;
    const stackWide = status.outcome !== undefined && STACK_WIDE.has(status.outcome);
    if (status.consecutiveFailures > 0 && (!stackWide || this.lastLogged.has(STACK))) {
      const what = stackWide ? `stack ${this.opts.stack.name}` : endpoint;
      this.opts.logger.info(
        { endpoint, failedPolls: status.consecutiveFailures },
        `${what} recovered after ${status.consecutiveFailures} failed poll(s)`,
      );
    }
    this.forbidden.delete(endpoint);
    this.lastLogged.delete(endpoint);
    if (stackWide) this.lastLogged.delete(STACK);
    Object.assign(status, {
      state: 'ok',
      lastPollAt: at,
      lastDurationSeconds: at - started,
      outcome: 'success',
      error: undefined,
      hint: undefined,
      consecutiveFailures: 0,
      retryAt: undefined,
    });
  }

  private failed(status: Mutable, err: unknown, started: number, partial = false): void {
    const { endpoint } = status;
    const at = this.opts.now();
    const forbidden = err instanceof CmdbHttpError && err.status === 403;
    const outcome: PollOutcome = forbidden ? 'forbidden' : err instanceof CmdbError ? (err.outcome as PollOutcome) : 'error';
    if (!partial) void this.opts.store.fail(this.opts.stack.name, endpoint, undefined, forbidden);
    const message = this.opts.scrubber.scrub(err instanceof Error ? err.message : String(err));
    const hint = hintFor(outcome, endpoint, this.opts.stack.auth.kind);
    Object.assign(status, {
      state: 'failing',
      lastPollAt: at,
      lastDurationSeconds: at - started,
      outcome,
      error: message,
      hint,
      consecutiveFailures: status.consecutiveFailures + 1,
      retryAt: undefined,
    });
    if (forbidden) this.backOff(status);
    this.log(status, err, message, hint, outcome);
  }

  private backOff(status: Mutable): void {
    const { forbiddenBackoffSeconds: first, forbiddenBackoffMaxSeconds: max } = this.opts.stack;
    const previous = this.forbidden.get(status.endpoint);
    const backoff = previous ? Math.min(previous.backoff * 2, max) : first;
    const until = this.opts.now() + backoff;
    this.forbidden.set(status.endpoint, { until, backoff });
    status.state = 'forbidden';
    status.retryAt = until;
  }

  /**
   * Log a failure when it starts or changes kind, then as a reminder at most once an hour; a
   * stack-wide failure (the token rejected) once for the whole stack.
   */
  private log(status: Mutable, err: unknown, message: string, hint: string, outcome: PollOutcome): void {
    const { endpoint } = status;
    const key = STACK_WIDE.has(outcome) ? STACK : endpoint;
    const previous = this.lastLogged.get(key);
    const at = this.opts.now();
    const fields: Record<string, unknown> = { endpoint, outcome, hint, consecutiveFailures: status.consecutiveFailures };
    if (status.retryAt !== undefined) fields.retryInSeconds = Math.round(status.retryAt - at);
    if (!(err instanceof CmdbError)) fields.err = err instanceof Error ? this.opts.scrubber.scrub(err.stack ?? err.message) : String(err);
    if (key === STACK) fields.scope = 'every endpoint of this stack fails until the token is accepted';
    if (!previous || previous.outcome !== outcome) {
      const level = err instanceof CmdbError ? 'warn' : 'error';
      this.opts.logger[level](fields, message);
    } else if (at - previous.at >= REMINDER_SECONDS) {
      this.opts.logger.warn(fields, `still failing: ${message}`);
    } else {
      return;
    }
    this.lastLogged.set(key, { outcome, at });
  }
}
