/**
 * What every poller of a stack shares: the collectors that turn an answer into samples, with the
 * states the state-set collectors remember (StateMemory: one per stack, whichever endpoint taught
 * it), and what a poll's requests carry.
 */
import type { CmdbApi, DataEndpoint, EndpointInputs } from '../api/endpoints.js';
import { COLLECTORS } from '../collectors/index.js';
import { StateMemory } from '../collectors/state-memory.js';
import type { Collector, CollectorContext } from '../collectors/types.js';
import type { StackConfig } from '../config/types.js';
import type { Logger } from '../logger.js';
import type { PollDeadline } from './deadline.js';
import type { EndpointRunner, PollResult } from './endpoint-runner.js';

/** What a poll's requests carry: its signal (always set) and its deadline. */
export type PollContext = PollDeadline['context'];

/** What each of a stack's pollers works with. */
export interface PollerParts {
  /** The stack's settings now (a reload that keeps the stack's road keeps its pollers). */
  readonly stack: () => StackConfig;
  readonly api: CmdbApi;
  readonly runner: EndpointRunner;
  readonly mapper: Mapper;
  readonly logger: Logger;
  /** Unix seconds. */
  readonly now: () => number;
}

/** A poll of one group: never throws but for an abort (the runner records the rest). */
export interface GroupPoller {
  poll(ctx: PollContext, stop?: AbortSignal): Promise<void>;
}

/** A poll's answer mapped: the samples that replace the endpoint's series. */
export type Mapped = PollResult & { kind: 'samples' };

export class Mapper {
  readonly states = new StateMemory();

  constructor(private readonly opts: Pick<PollerParts, 'stack' | 'logger' | 'now'>) {}

  /** What a collector is given besides the answer: the time, the stack's time zone, the remembered states. */
  context(endpoint: DataEndpoint): CollectorContext {
    const { logger } = this.opts;
    return {
      now: this.opts.now(),
      timeZone: this.opts.stack().timezone,
      states: this.states,
      debug: (message, fields) => logger.debug({ ...fields, endpoint }, message),
    };
  }

  map<E extends DataEndpoint>(endpoint: E, input: EndpointInputs[E]): Mapped {
    const collect: Collector<E> = COLLECTORS[endpoint];
    return { kind: 'samples', samples: collect(input, this.context(endpoint)) };
  }

  /** The answers of the ids that were read; with `error`, some were not: the endpoint reports down with them. */
  partial<E extends DataEndpoint>(endpoint: E, input: EndpointInputs[E], error: unknown): PollResult {
    const result = this.map(endpoint, input);
    return error === undefined ? result : { kind: 'partial', samples: result.samples, error };
  }
}
