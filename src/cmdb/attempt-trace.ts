/**
 * What one attempt did as it went: when it (and each redirect hop) really left, what came back, and
 * at its end the request event that reports it and the slot that goes back. transport.ts makes one
 * per attempt; keeping this here keeps the transport's loop about decisions.
 */
import { performance } from 'node:perf_hooks';
import { CmdbAbortedError, requestOutcome, statusOutcome, type RequestOutcome } from '../errors.js';
import type { Reply } from './attempt.js';
import type { Clock } from './clock.js';
import type { RequestEvent, RoadEvents } from './events.js';
import type { Admitted } from './limiter.js';

/** The parts of a request event known before the attempt leaves. */
export type AttemptReport = Pick<RequestEvent, 'endpoint' | 'method' | 'request' | 'page' | 'attempt' | 'waitSeconds'>;

export class AttemptTrace {
  /** When it last left (ms since the epoch). */
  sentAt: number;
  private left = false;
  /** Its first byte was written (firstByte): the send is told, its time fixed. */
  private written = false;
  private started = performance.now();
  /** The budget's window counts each request from when it really left: the attempt's, then each hop's. */
  private markSent: (at: number) => void;
  /** The CMDB answered and asked nothing (not a 429 or a 5xx): after a pause, that widens the scope again. */
  private answered: boolean | undefined;
  private outcome: RequestOutcome | 'aborted' = 'network';
  private status: number | undefined;
  private bytes: number | undefined;
  private decoded: number | undefined;

  constructor(
    private readonly report: AttemptReport,
    private readonly admitted: Admitted,
    private readonly events: RoadEvents,
    private readonly clock: Clock,
  ) {
    this.sentAt = clock.now();
    this.markSent = (at) => admitted.sent(at);
  }

  /** The attempt, or a hop of it, is handed to the dispatcher now (the budget let it through). */
  leaves(): void {
    this.left = true;
    this.written = false;
    this.sentAt = this.clock.now();
    this.markSent(this.sentAt);
  }

  /**
   * Its first byte is written now (first-byte.ts): the budget's window counts it from then, and the
   * send is told (events.ts SendEvent). Written again on another connection, it keeps its first time.
   */
  firstByte(): void {
    if (!this.left || this.written) return;
    this.written = true;
    this.sentAt = Math.max(this.sentAt, this.clock.now());
    this.markSent(this.sentAt);
    this.started = performance.now();
    this.events.sends.emit({ endpoint: this.report.endpoint, sentAt: this.sentAt });
  }

  /** A hop was answered with a redirect: reported as a request of its own; the next hop is charged to the budget (`charge`). */
  async redirected(status: number, charge: () => Promise<(at: number) => void>): Promise<void> {
    this.events.requests.emit({ ...this.report, outcome: statusOutcome(status), status, durationSeconds: this.seconds(), sentAt: this.sentAt, redirected: true });
    this.left = false;
    try {
      this.markSent = await charge();
    } catch {
      throw new CmdbAbortedError(this.report.request);
    }
    this.started = performance.now();
  }

  replied(reply: Reply): void {
    this.status = reply.status;
    this.outcome = statusOutcome(reply.status);
    // What came over the wire: a compressed answer counts its compressed size.
    this.bytes = reply.wireBytes ?? reply.body.length;
    this.decoded = reply.body.length;
    this.answered = reply.status < 500 && reply.status !== 429;
  }

  failed(err: unknown): void {
    this.outcome = err instanceof CmdbAbortedError ? 'aborted' : requestOutcome(err);
    // A body that does not decode was still an answer (its status says whether it asked to wait);
    // a failure before one (network, timeout) is no answer at all.
    if (this.status === undefined) this.answered = this.outcome === 'aborted' ? undefined : false;
  }

  /** The slot goes back; the request is reported when it left (a shutdown is not an outcome of the CMDB). */
  end(): void {
    this.admitted.release(this.left ? this.answered : undefined);
    if (!this.left || this.outcome === 'aborted') return;
    const { status, bytes, decoded } = this;
    this.events.requests.emit({
      ...this.report,
      outcome: this.outcome,
      ...(status === undefined ? {} : { status }),
      bytes,
      ...(decoded === undefined ? {} : { decodedBytes: decoded }),
      durationSeconds: this.seconds(),
      sentAt: this.sentAt,
    });
  }

  private seconds(): number {
    return (performance.now() - this.started) / 1000;
  }
}
