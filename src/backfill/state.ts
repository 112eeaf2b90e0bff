/**
 * The state file of a backfill in --out (docs/backfill.md, "Stoppable and resumable"): the command
 * (the flags and the configuration that decide what is written), the ranges it resolved (`--from
 * 30d` is another time tomorrow) and the windows written (their missing units, the chunks a target
 * took), so that the same command run again writes nothing twice. A document (src/persist/document.ts)
 * replaced after each window; no secret: the stacks' services as a hash, URLs without credentials.
 */
import { join } from 'node:path';
import { readDocumentSync, writeDocumentSync } from '../persist/document.js';

export const STATE_FILE = 'cmdb-backfill.state.json';
const FORMAT = 'cmdb-backfill-state';
const VERSION = 2;

/** What must be the same for a run to continue another: flag texts and configuration, by name. */
export type Fingerprint = Readonly<Record<string, string>>;

export interface WindowRecord {
  /** Every sample of the units known then is written. */
  done?: boolean;
  /** Units (`stack:key`) that were missing when it was written. */
  missing?: string[];
  /** Remote write, a pass in progress: the chunks the target took. */
  acked?: string[];
  /** Samples written into it, all passes. */
  samples: number;
}

interface StateData {
  format: typeof FORMAT;
  version: number;
  about: string;
  command: Fingerprint;
  /** Per stack, the ranges to write (unix seconds, inclusive). */
  ranges: Record<string, Array<[number, number]>>;
  /** Resolved defaults (the instance label) that a continued run must not resolve again. */
  resolved: Record<string, string>;
  /** By window start (unix seconds). */
  windows: Record<string, WindowRecord>;
  complete: boolean;
}

export class StateMismatchError extends Error {}

export class BackfillState {
  private constructor(
    readonly path: string,
    private readonly data: StateData,
    /** True when an earlier run's state was found. */
    readonly resumed: boolean,
  ) {}

  /** The state in `dir` for `command`: the earlier run's, or a new one; StateMismatchError when it was another's. */
  static open(dir: string, command: Fingerprint): BackfillState {
    const path = join(dir, STATE_FILE);
    const read = readDocumentSync(path, FORMAT, VERSION);
    if (read.kind === 'missing') return new BackfillState(path, { format: FORMAT, version: VERSION, about: ABOUT, command, ranges: {}, resolved: {}, windows: {}, complete: false }, false);
    if (read.kind === 'unreadable') throw new StateMismatchError(`${path} is not a backfill state file (${read.reason}): remove it, or give another --out`);
    if (read.kind === 'other') throw new StateMismatchError(`${path} was written by another version of the backfill (${read.reason}): remove it (and ${'cmdb-backfill.answers.jsonl'}) to start over, or give another --out`);
    const data = read.value as unknown as StateData;
    const differs = [...new Set([...Object.keys(command), ...Object.keys(data.command)])].filter((k) => command[k] !== data.command[k]).sort();
    if (differs.length > 0) {
      const what = differs.map((k) => `${k}: ${show(data.command[k])} then, ${show(command[k])} now`).join('; ');
      throw new StateMismatchError(
        `--out ${dir} holds another backfill (${what}). Run that one again with its own flags to continue it, give another --out, or remove ${path} to start over`,
      );
    }
    return new BackfillState(path, data, true);
  }

  get complete(): boolean {
    return this.data.complete;
  }

  ranges(stack: string): Array<[number, number]> | undefined {
    return this.data.ranges[stack];
  }

  resolved(name: string): string | undefined {
    return this.data.resolved[name];
  }

  /** Sets what this run resolved (ranges, defaults); written with the next save. */
  plan(ranges: Record<string, Array<[number, number]>>, resolved: Record<string, string>): void {
    this.data.ranges = ranges;
    this.data.resolved = resolved;
  }

  window(start: number): WindowRecord | undefined {
    return this.data.windows[String(start)];
  }

  /** Chunks of a pass in progress that the target took. */
  acked(start: number, chunks: readonly string[], samples: number): void {
    const w = (this.data.windows[String(start)] ??= { samples: 0 });
    w.acked = [...(w.acked ?? []), ...chunks];
    w.samples += samples;
    this.save();
  }

  /** The window's pass is written; `missing` are the units still without an answer. */
  done(start: number, missing: readonly string[], samples: number): void {
    const w = (this.data.windows[String(start)] ??= { samples: 0 });
    w.done = true;
    w.samples += samples;
    delete w.acked;
    if (missing.length > 0) w.missing = [...missing];
    else delete w.missing;
    this.save();
  }

  /** Windows done, and samples written into them, over all runs. */
  totals(): { windows: number; samples: number } {
    const all = Object.values(this.data.windows);
    return { windows: all.filter((w) => w.done).length, samples: all.reduce((n, w) => n + w.samples, 0) };
  }

  finish(complete: boolean): void {
    this.data.complete = complete;
    this.save();
  }

  save(): void {
    writeDocumentSync(this.path, this.data);
  }
}

const ABOUT = 'cmdb-exporter backfill: what this backfill has read and written. Run the same command again to continue it; remove this file (and cmdb-backfill.answers.jsonl) to start over.';

const show = (v: string | undefined) => (v === undefined ? 'unset' : JSON.stringify(v));
