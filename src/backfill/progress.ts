/**
 * Progress of a backfill phase: a bar with the ETA redrawn in place on a terminal, plain lines
 * (at most one per PLAIN_EVERY_MS, and at the end) when the output is a file or a pipe.
 */
import { formatDuration } from '../config/durations.js';

const DRAW_EVERY_MS = 200;
const PLAIN_EVERY_MS = 10_000;
const BAR = 30;

export interface ProgressSink {
  readonly isTTY?: boolean;
  write(text: string): unknown;
}

export class Progress {
  private done = 0;
  private readonly started: number;
  private drawnAt = 0;

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
    const eta = this.done > 0 && share < 1 ? formatDuration(Math.ceil((elapsed / this.done) * (total - this.done))) : '-';
    const filled = Math.round(share * BAR);
    return `${this.label} [${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}] ${Math.floor(share * 100)}% ${this.done}/${total} ${this.unit}, ${share < 1 ? `ETA ${eta}` : `took ${formatDuration(Math.round(elapsed))}`}`;
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
