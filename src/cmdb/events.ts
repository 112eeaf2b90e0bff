/**
 * What the road to one stack's CMDB reports as it goes, one channel per kind of event below, for
 * whoever needs the figures (metrics, logs, the poll plan, the record of sends, tests checking the
 * CMDB's request log). Observers are called in turn and their failures are theirs: a request never
 * fails because an observer did.
 */
import type { DataEndpoint, EndpointName } from '../api/endpoints.js';
import type { RequestOutcome } from '../errors.js';
import type { Pause } from './pauses.js';

/** One request that left (an attempt, or a hop of a redirect). */
export interface RequestEvent {
  readonly endpoint: EndpointName;
  readonly method: 'GET' | 'POST';
  /** `METHOD /path` without the query string. */
  readonly request: string;
  /** The page asked for, for a paged list. */
  readonly page?: number;
  readonly outcome: RequestOutcome;
  /** The status answered, when one was. */
  readonly status?: number;
  /** Bytes of the body as they came over the wire (compressed when the answer was). */
  readonly bytes?: number;
  /** Bytes of the body once decoded, when they differ. */
  readonly decodedBytes?: number;
  /** From leaving to the last byte (or the failure). */
  readonly durationSeconds: number;
  /** Waited for pauses and the budget before it left. */
  readonly waitSeconds: number;
  /** 1 for the first attempt of a logical request, 2 for its first retry, …; a hop counts as its attempt. */
  readonly attempt: number;
  /** When it left, ms since the epoch. */
  readonly sentAt: number;
  /** This hop was answered with a redirect that was followed. */
  readonly redirected?: boolean;
}

/**
 * A request (an attempt, or a redirect hop) leaves now: told synchronously before its first byte is
 * written (first-byte.ts), so that --storage.path's budget.log holds it before the CMDB can have seen
 * it, even if the process is killed right after. A request whose connection never opened is never told.
 */
export interface SendEvent {
  readonly endpoint: EndpointName;
  /** ms since the epoch: the time the budget's window counts it from. */
  readonly sentAt: number;
}

/**
 * The budget let a request (an attempt, or a redirect hop) leave: when its place was planned as it
 * was taken, and when it was let through (later when a timer fired late or the window filled). What
 * reached the CMDB can be checked against it without timing it.
 */
export interface GrantEvent {
  /** ms since the epoch: its place's time as taken. */
  readonly plannedAt: number;
  /** ms since the epoch: when it was let through, the time the window counts it from at the least. */
  readonly at: number;
}

/** A saved query's count took its slot of the queries' pacer (queriesPerMinute): one a request, retries included. */
export interface PacedEvent {
  /** ms since the epoch: the slot's time (slots are 60/queriesPerMinute s apart). */
  readonly slotAt: number;
}

/** One read a reader finished: a full or incremental scan of the connector history, a paged list. */
export interface ReadEvent {
  readonly endpoint: DataEndpoint;
  readonly pages: number;
  readonly rows: number;
  readonly kind?: 'full' | 'incremental';
}

/** A pause began (or grew), or every pause ended (a reload: `pause` undefined). */
export interface PauseEvent {
  readonly pause?: Pause;
  /** A new pause rather than a longer one of a scope already paused. */
  readonly began: boolean;
}

type Observer<E> = (event: E) => void;

class Channel<E> {
  private readonly observers = new Set<Observer<E>>();

  on(observer: Observer<E>): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  emit(event: E): void {
    for (const observer of this.observers) {
      try {
        observer(event);
      } catch {
        // An observer's failure is its own: the request it reports on has happened either way.
      }
    }
  }
}

export class RoadEvents {
  readonly requests = new Channel<RequestEvent>();
  readonly sends = new Channel<SendEvent>();
  readonly grants = new Channel<GrantEvent>();
  readonly paced = new Channel<PacedEvent>();
  readonly reads = new Channel<ReadEvent>();
  readonly pauses = new Channel<PauseEvent>();
}
