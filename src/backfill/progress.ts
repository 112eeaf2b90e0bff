/**
 * Progress of a backfill phase: a bar with the ETA redrawn in place on a terminal, plain lines (at
 * most one per PLAIN_EVERY_MS, and at the end) into a file or a pipe. Reading counts in parts, one
 * per stack, each at its own pace; a part whose failures run towards the fail-fast rule's limit
 * (fail-fast.ts) ends when the rule stops it at the latest, and the line says so (docs/backfill.md,
 * "Fails fast, and says why").
 */
import { formatDuration } from '../config/durations.js';

const DRAW_EVERY_MS = 200;
const PLAIN_EVERY_MS = 10_000;
const BAR = 30;

export interface ProgressSink {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

/** The fail-fast rule stops a part within `seconds` if its failures go on, and why; or it has stopped it. */
export interface Outlook {
  readonly seconds: number;
  /** `requests timed out: 2 in a row, 3 stop the reading`; once stopped, the rule's reason. */
  readonly why: string;
  /** The rule has stopped the part: what is left of it is listed as missing without a request. */
  readonly stopped?: boolean;
}

/** One stack's share of a phase: what history.ts reports its reading to. */
export interface ProgressPart {
  step(): void;
  /** The answers say there is more to read (pages, Actions). */
  grow(more: number): void;
  /** The part's outlook, or undefined once an answer came; drawn with the next step. */
  outlook(o: Outlook | undefined): void;
}

interface PartState {
  done: number;
  total: number;
  /** When the rule stops the part if the failures go on (ms, the progress clock), and why. */
  stopsAt?: { at: number; why: string; stopped: boolean };
}

export class Progress {
  private done = 0;
  private readonly started: number;
  private drawnAt = 0;
  private readonly parts = new Map<string, PartState>();

  constructor(
    private readonly label: string,
    private total: number,
    private readonly unit: string,
    private readonly out: ProgressSink,
    private readonly now: () => number = Date.now,
  ) {
    this.started = now();
  }

  /** The total grows when the answers say there is more (pages, Actions). */
  grow(more: number): void {
    this.total += more;
  }

  advance(n = 1): void {
    this.done += n;
    this.draw(false);
  }

  /** A part of `total` of the phase's total (counted in it already), named `name`. */
  part(name: string, total: number): ProgressPart {
    const state: PartState = { done: 0, total };
    this.parts.set(name, state);
    return {
      step: () => {
        state.done += 1;
        this.advance();
      },
      grow: (more) => {
        state.total += more;
        this.grow(more);
      },
      outlook: (o) => {
        if (o) state.stopsAt = { at: this.now() + o.seconds * 1000, why: o.why, stopped: o.stopped === true };
        else delete state.stopsAt;
      },
    };
  }

  /** Sets the position (for a phase measured in time rather than in items). */
  set(done: number): void {
    this.done = done;
    this.draw(false);
  }

  finish(note = ''): void {
    this.done = Math.max(this.done, this.total);
    this.draw(true, note);
  }

  /** `[######......] 45% 120/260 requests, ETA 3m12s` */
  line(): string {
    const total = Math.max(this.total, this.done, 1);
    const share = this.done / total;
    const elapsed = (this.now() - this.started) / 1000;
    const filled = Math.round(share * BAR);
    return `${this.label} [${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${Math.floor(share * 100)}% ${this.done}/${total} ${this.unit}, ${share < 1 ? this.eta(elapsed, total) : `took ${formatDuration(Math.round(elapsed))}`}`;
  }

  /**
   * `ETA 3m12s`: when the last part ends at its own pace, or, for a part the fail-fast rule would
   * stop, when the rule stops it if that is sooner: `ETA 4m (stack prod stops reading within 4m …)`.
   */
  private eta(elapsed: number, total: number): string {
    if (this.parts.size === 0) return `ETA ${this.done > 0 ? formatDuration(Math.ceil((elapsed / this.done) * (total - this.done))) : '-'}`;
    const now = this.now();
    const left = (p: PartState) => (p.stopsAt ? Math.max(0, (p.stopsAt.at - now) / 1000) : Number.POSITIVE_INFINITY);
    let latest = 0;
    for (const p of this.parts.values()) {
      if (p.done >= p.total) continue;
      // A part's own pace; one that has not done a step yet goes at the phase's.
      const pace = p.done > 0 ? elapsed / p.done : this.done > 0 ? elapsed / this.done : Number.POSITIVE_INFINITY;
      latest = Math.max(latest, Math.min(pace * (p.total - p.done), left(p)));
    }
    const eta = `ETA ${Number.isFinite(latest) ? formatDuration(Math.ceil(latest)) : '-'}`;
    const failing = [...this.parts].filter(([, p]) => p.stopsAt !== undefined && p.done < p.total);
    if (failing.length === 0) return eta;
    const why = failing.map(([name, p]) =>
      p.stopsAt?.stopped ? `stack ${name} stopped reading: ${p.stopsAt.why}` : `stack ${name} stops reading within ${formatDuration(Math.ceil(left(p)))} unless its CMDB answers: ${p.stopsAt?.why}`,
    );
    return `${eta} (${why.join('; ')})`;
  }

  private draw(final: boolean, note = ''): void {
    const t = this.now();
    const every = this.out.isTTY ? DRAW_EVERY_MS : PLAIN_EVERY_MS;
    if (!final && t - this.drawnAt < every) return;
    this.drawnAt = t;
    const text = `${this.line()}${note ? ` ${note}` : ''}`;
    if (this.out.isTTY) this.out.write(`\r\x1b[2K${text}${final ? '\n' : ''}`);
    else this.out.write(`${text}\n`);
  }
}
