/**
 * One scrape target per stack (GET /metrics?stack=NAME) and the exporter's own metrics alone
 * (GET /metrics?only=exporter), made like the whole exposition: bytes made once per change, both
 * encodings, shared by every scrape (scrape-response.ts).
 *
 * A stack's response holds the stack's snapshot series (its view of the store, assembled once per
 * change of that stack) and the series of the exporter's own metrics that carry its `stack` label
 * (requests, token requests, rate budget, series dropped: what the alerts about a stack read). The
 * exporter's own metrics without a `stack` label (process, reload, shard, HTTP refusals) go only
 * into the exporter's response. Together they hold every series of the whole /metrics, each once.
 *
 * The exporter's own metrics are rendered once for all stacks (at most every SPLIT_MAX_AGE_MS) and
 * split by their `stack` label; each response keeps its part at most as long again, so the stack's
 * own counters in a per-stack scrape are at most 2 × SPLIT_MAX_AGE_MS (10 s) old, where the whole
 * /metrics serves them at most 1 s old. Rendering prom-client's registry is the costly part of a
 * fleet: at 200 stacks it is 4.7 MiB of text, about 0.5 s of CPU on the benchmark machine, and the
 * per-stack targets of a fleet are scraped all the time; once every 5 s bounds it to a tenth of a
 * core whatever the number of targets (docs/scaling.md).
 */
import { GzipPieces, ScrapeResponses, type ScrapeResponse } from './scrape-response.js';
import type { ExpositionSource, SnapshotStore } from './snapshot-store.js';

export const SPLIT_MAX_AGE_MS = 5000;

export interface SplitMetrics {
  /** Per stack, its families (HELP, TYPE and its series only), in the order of the text. */
  readonly byStack: ReadonlyMap<string, string>;
  /** The families and series without a `stack` label. */
  readonly exporter: string;
}

/**
 * The value of the `stack` label of one sample line in the text format, or undefined. Label values
 * are scanned with their escapes, so `stack="` inside another label's value is not taken for it.
 */
export function stackOfLine(line: string): string | undefined {
  const open = line.indexOf('{');
  const space = line.indexOf(' ');
  if (open < 0 || (space >= 0 && space < open)) return undefined;
  let i = open + 1;
  while (i < line.length && line[i] !== '}') {
    const eq = line.indexOf('=', i);
    if (eq < 0 || line[eq + 1] !== '"') return undefined;
    const name = line.slice(i, eq).trim();
    let j = eq + 2;
    let value = '';
    while (j < line.length && line[j] !== '"') {
      if (line[j] === '\\') {
        const next = line[j + 1];
        value += next === 'n' ? '\n' : (next ?? '');
        j += 2;
      } else value += line[j++];
    }
    if (name === 'stack') return value;
    i = j + 1;
    if (line[i] === ',') i++;
  }
  return undefined;
}

/** Splits an exposition text (prom-client's) by the `stack` label of its series. */
export function splitByStack(text: string): SplitMetrics {
  const byStack = new Map<string, string[]>();
  const exporter: string[] = [];
  let header: string[] = [];
  let lines = new Map<string | undefined, string[]>();
  const flush = () => {
    for (const [stack, own] of lines) {
      const out = stack === undefined ? exporter : (byStack.get(stack) ?? (byStack.set(stack, []).get(stack) as string[]));
      out.push(...header, ...own);
    }
    header = [];
    lines = new Map();
  };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      // A family starts with its HELP (or TYPE when there is no HELP) after series of the one before.
      if (line.startsWith('# HELP ') || lines.size > 0) flush();
      header.push(line);
      continue;
    }
    const stack = stackOfLine(line);
    let own = lines.get(stack);
    if (!own) lines.set(stack, (own = []));
    own.push(line);
  }
  flush();
  const joined = (l: string[]) => (l.length === 0 ? '' : `${l.join('\n')}\n`);
  return { byStack: new Map([...byStack].map(([s, l]) => [s, joined(l)])), exporter: joined(exporter) };
}

export interface PerStackOptions {
  readonly store: SnapshotStore;
  /** The exporter's own metrics (prom-client's registry), all stacks. */
  readonly selfMetrics: () => Promise<string>;
  readonly now: () => number;
  /** Shared with the whole exposition's responses: a piece is compressed once for all. */
  readonly pieces?: GzipPieces;
  readonly monotonicMs?: () => number;
}

const NOTHING: ExpositionSource = { settled: () => Promise.resolve(), segments: () => [], daysText: () => '' };

export class PerStackResponses {
  private readonly responses = new Map<string, ScrapeResponses>();
  private exporterResponses: ScrapeResponses | undefined;
  private split: { at: number; value: Promise<SplitMetrics> } | null = null;
  private readonly pieces: GzipPieces;
  private readonly monotonicMs: () => number;

  constructor(private readonly opts: PerStackOptions) {
    this.pieces = opts.pieces ?? new GzipPieces();
    this.monotonicMs = opts.monotonicMs ?? (() => performance.now());
  }

  /** The response of `stack`, or undefined when this exporter does not poll it. */
  stack(stack: string): Promise<ScrapeResponse> | undefined {
    const { store } = this.opts;
    if (!store.hasStack(stack)) {
      this.responses.delete(stack);
      return undefined;
    }
    if (this.responses.size > store.stackNames().length) {
      for (const name of this.responses.keys()) if (!store.hasStack(name)) this.responses.delete(name);
    }
    let responses = this.responses.get(stack);
    if (!responses) {
      const self = async () => (await this.splitSelf()).byStack.get(stack) ?? '';
      responses = this.make(store.view(stack), self);
      this.responses.set(stack, responses);
    }
    return responses.current();
  }

  /** The exporter's own metrics without a `stack` label. */
  exporter(): Promise<ScrapeResponse> {
    this.exporterResponses ??= this.make(NOTHING, async () => (await this.splitSelf()).exporter);
    return this.exporterResponses.current();
  }

  /** A reload's outcome shows on the next scrape (as on the whole /metrics). */
  selfMetricsChanged(): void {
    this.split = null;
    this.exporterResponses?.selfMetricsChanged();
    for (const r of this.responses.values()) r.selfMetricsChanged();
  }

  private make(store: ExpositionSource, selfMetrics: () => Promise<string>): ScrapeResponses {
    const { now } = this.opts;
    return new ScrapeResponses({ store, selfMetrics, now, pieces: this.pieces, maxAgeMs: SPLIT_MAX_AGE_MS, monotonicMs: this.monotonicMs });
  }

  /** prom-client's text split by stack, rendered at most every SPLIT_MAX_AGE_MS, once for all stacks. */
  private splitSelf(): Promise<SplitMetrics> {
    const at = this.monotonicMs();
    if (this.split && at - this.split.at < SPLIT_MAX_AGE_MS) return this.split.value;
    const value = this.opts.selfMetrics().then(splitByStack);
    this.split = { at, value };
    value.catch(() => {
      if (this.split?.value === value) this.split = null;
    });
    return value;
  }
}
